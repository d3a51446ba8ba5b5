import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { generateApiTypes, SCHEMA_FILE } from '../../scripts/dashboard-api-types.js';

describe("the dashboard's API types", () => {
  it('are generated from the current OpenAPI document (npm run dashboard:types rewrites them)', async () => {
    const committed = readFileSync(SCHEMA_FILE, 'utf8');
    const fresh = await generateApiTypes();
    assert.ok(committed === fresh, 'web/src/api/schema.d.ts is stale: run `npm run dashboard:types` and commit it');
  });
});
