// Builds the dashboard into the daemon's dist/ui: index.html at its root, hashed assets under
// /ui/assets/ (the daemon serves the page at / and the assets there). No CDN: everything the
// page needs is in the bundle.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/ui/',
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../dist/ui', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    // The page's own CSP allows no inline script or style.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: 'es2022',
  },
});
