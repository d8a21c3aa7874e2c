import { DeleteObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { runBounded } from '../lib/bounded.js';
import type { PayloadEraser } from './people-lifecycle-store.js';

/** Deletes payloads (claim checks, rendered emails) of the payloads bucket, 8 at a time. */
export class S3PayloadEraser implements PayloadEraser {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
  ) {}

  async erase(keys: string[]): Promise<void> {
    const { failure } = await runBounded([...new Set(keys)], 8, async (key) => {
      // Deleting an object that is not there succeeds (S3's rule).
      await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    });
    if (failure) throw failure.error;
  }
}
