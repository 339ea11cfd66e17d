// Lint: type-aware TypeScript rules, camelCase file names, and the package boundaries —
// `actor` and `core` share only `protocol`; `client` sees `protocol` types only.
import tseslint from 'typescript-eslint';
import unicorn from 'eslint-plugin-unicorn';

const boundary = (forbidden, message) => ({
  'no-restricted-imports': ['error', { patterns: forbidden.map((group) => ({ group: [group, `${group}/*`], message })) }],
});

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'coverage/**', 'test-results/**', 'bench-results/**', 'docs/api/**'] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    // Type information comes from the tsconfig.json nearest each file: a package's own for `src`,
    // `<dir>/test/tsconfig.json` for its tests. Root-level config files use the default project.
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.js', '*.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
  },
  {
    // Plain JavaScript (fixtures, bench, bins, examples) is in no tsconfig: lint it without types.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    plugins: { unicorn },
    rules: {
      'unicorn/filename-case': ['error', { case: 'camelCase', ignore: ['^README\\.md$', '\\.d\\.mts$'] }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
      // An async function without `await` is how a Promise-returning interface member is met.
      '@typescript-eslint/require-await': 'off',
      // The SDK's error codes are a numeric enum, compared against the number a wire error carries.
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
      'no-console': 'error',
    },
  },
  {
    files: ['packages/protocol/src/**'],
    rules: boundary(['@mcpool/actor', '@mcpool/core', '@mcpool/client', '@modelcontextprotocol/sdk', 'xstate', 'pino'], 'protocol has no dependencies on other layers: it is the shared vocabulary.'),
  },
  {
    files: ['packages/actor/src/**'],
    rules: boundary(['@mcpool/core', '@mcpool/client'], 'actor and core share only @mcpool/protocol: put shared types and messages there.'),
  },
  {
    files: ['packages/core/src/**'],
    rules: boundary(['@mcpool/actor', '@mcpool/client', 'xstate'], 'core talks to actors only through @mcpool/protocol messages; it locates the worker entry with import.meta.resolve.'),
  },
  {
    files: ['packages/gateway/src/**'],
    rules: boundary(['@mcpool/actor', '@mcpool/client', 'fastify', 'pino', 'xstate'], 'the gateway builds on core and protocol only, and knows no HTTP framework: apps/daemon wires it to HTTP.'),
  },
  {
    files: ['packages/client/src/**'],
    // The Node entry (`@mcpool/client/node`, the local socket) is the one place Node is allowed;
    // the root's module graph never reaches it (packages/client/test/barrelClean.test.ts).
    ignores: ['packages/client/src/node.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: '@mcpool/client runs in a browser/webview too: use fetch and web APIs only.' },
            { group: ['@mcpool/core', '@mcpool/core/*', '@mcpool/actor', '@mcpool/actor/*'], message: 'the client sees the daemon over HTTP, never the pool itself.' },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js', 'test/**', 'packages/*/test/**', 'apps/*/test/**', 'examples/**'],
    rules: { 'no-console': 'off', '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Tests read untyped data on purpose (HTTP bodies, JSON log lines, raw frames): the
    // assertion on it is its check, so `any` flowing from it is not flagged.
    files: ['test/**', 'packages/*/test/**', 'apps/*/test/**'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
);
