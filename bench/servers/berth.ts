// Berth itself for benches: a fresh data dir (SQLite unless DATABASE_URL is set), one owner user.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { adminCreateUser } from '../../src/modules/auth/auth.service.js';

const dataDir = process.env.BENCH_DATA_DIR ?? mkdtempSync(path.join(os.tmpdir(), 'berth-bench-'));
const config = loadConfig(
  { host: '127.0.0.1', port: 0, edgePort: 0 },
  { ...process.env, BERTH_DATA_DIR: dataDir, BERTH_SECRET_KEY: randomBytes(32).toString('base64'), BERTH_LOG_LEVEL: 'warn' },
);
const server = await startServer(config, () => {});
const user = await adminCreateUser(server.app.berth.ctx, { email: `bench-${Date.now()}@example.test`, password: 'bench-password' });
console.log(JSON.stringify({ url: server.url, token: user.token, orgId: user.orgId, userId: user.userId, dataDir, pid: process.pid }));
process.on('SIGTERM', () => void server.stop().then(() => process.exit(0)));
