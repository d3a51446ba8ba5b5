import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { generateApiTypes, SCHEMA_FILE } from '../../scripts/dashboard-api-types.js';

describe("the API types of the dashboard and the CLI", () => {
  it('are generated from the current OpenAPI document (npm run dashboard:types rewrites them)', async () => {
    const committed = readFileSync(SCHEMA_FILE, 'utf8');
    const fresh = await generateApiTypes();
    assert.ok(committed === fresh, 'src/api-types/schema.d.ts is stale: run `npm run dashboard:types` and commit it');
  });
});
