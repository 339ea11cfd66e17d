/**
 * The state directory as the shared store (one machine): one file per key,
 * `<stateDir>/<namespace>/<key>.json`, the directory 0700 and the files 0600, each written to a
 * temporary file and renamed, so a crash never leaves half a value and a reader never sees one.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { assertKey, type SharedStore, type StoreNamespace } from './sharedStore.js';

const SUFFIX = '.json';

export class FileStore implements SharedStore {
  readonly kind = 'file' as const;
  readonly #dir: string;

  constructor(stateDir: string) {
    this.#dir = stateDir;
  }

  async get(namespace: StoreNamespace, key: string): Promise<string | undefined> {
    try {
      return await readFile(this.#file(namespace, key), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async set(namespace: StoreNamespace, key: string, value: string): Promise<void> {
    const dir = join(this.#dir, namespace);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await chmod(dir, 0o700);
    const file = this.#file(namespace, key);
    const temp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(temp, value, { mode: 0o600 });
    await rename(temp, file);
  }

  async delete(namespace: StoreNamespace, key: string): Promise<void> {
    await rm(this.#file(namespace, key), { force: true });
  }

  async keys(namespace: StoreNamespace): Promise<string[]> {
    try {
      return (await readdir(join(this.#dir, namespace))).filter((name) => name.endsWith(SUFFIX)).map((name) => name.slice(0, -SUFFIX.length));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  }

  async close(): Promise<void> {}

  #file(namespace: StoreNamespace, key: string): string {
    assertKey(key);
    return join(this.#dir, namespace, `${key}${SUFFIX}`);
  }
}
