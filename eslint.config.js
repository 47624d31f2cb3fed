// eslint: typescript-eslint's strict set, with the type-aware rules that catch real bugs in an
// event-driven daemon (a promise nobody awaits, a promise where a callback is expected).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'native/build/'] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test runs a test whether or not its promise is awaited.
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      // tsc's noUnusedParameters already takes `_name` as "unused on purpose" (an interface's argument
      // this implementation ignores); `const { key: _, ...rest } = o` is how we drop a key without `delete`.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  // Tests and benches index fixtures they built themselves: a `!` there is the assertion.
  { files: ['test/**/*.ts', 'bench/**/*.ts'], rules: { '@typescript-eslint/no-non-null-assertion': 'off' } },
  // These walk parsed YAML (manifests, alert rules) whose shape is what their assertions check.
  {
    files: ['test/packaging/**/*.ts', 'test/packaging.test.ts', 'test/monitoring/**/*.ts', 'test/helpers/kubelet.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  { files: ['**/*.js'], ...tseslint.configs.disableTypeChecked },
);
