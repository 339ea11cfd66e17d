/**
 * Watches the config file for changes. It watches the directory, not the file: editors save by
 * writing a new file and renaming it over the old one, which a watch on the file itself misses.
 * Changes are debounced; the daemon compares the file's digest, so a no-op save reloads nothing.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

export interface ConfigWatcher {
  close(): void;
}

export function watchConfigFile(path: string, onChange: () => void, onError: (error: Error) => void, debounceMs = 100): ConfigWatcher {
  const name = basename(path);
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(path), { persistent: false }, (_event, filename) => {
      if (filename !== null && filename !== name) return;
      clearTimeout(timer);
      timer = setTimeout(onChange, debounceMs);
    });
    watcher.on('error', onError);
  } catch (error) {
    onError(error as Error);
  }
  return {
    close() {
      clearTimeout(timer);
      watcher?.close();
    },
  };
}
