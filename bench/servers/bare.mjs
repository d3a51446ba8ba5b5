// The reference: a bare Fastify hello-world, started the same way as Berth (child process, plain
// node with the flags of `npm start`).
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/hello', async () => ({ data: { hello: 'world' } }));
await app.listen({ host: '127.0.0.1', port: 0 });
const addr = app.server.address();
console.log(JSON.stringify({ url: `http://127.0.0.1:${addr.port}`, pid: process.pid }));
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
