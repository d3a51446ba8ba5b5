// @ts-expect-error s3rver ships no type declarations
import S3rver from 's3rver';
import { tempDir } from '../support/harness.js';

/** A real S3-compatible server (s3rver) on 127.0.0.1 and a free port, with one bucket. */
export async function startS3(bucket = 'berth-backups'): Promise<{ endpoint: string; bucket: string; accessKeyId: string; secretAccessKey: string; close(): Promise<void> }> {
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: tempDir('berth-s3-'), configureBuckets: [{ name: bucket, configs: [] }] } as never);
  const addr = (await server.run()) as unknown as { port: number };
  return {
    endpoint: `http://127.0.0.1:${addr.port}`,
    bucket,
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    close: () => server.close() as unknown as Promise<void>,
  };
}
