// ESLint over every TypeScript and JavaScript file of the workspace; `pnpm lint` runs it with Prettier,
// knip and the type-check of tests and benchmarks. Layout is Prettier's; the rules here are about code.
// typescript-eslint's type-aware rules are left out: they need a whole-program type-check per run,
// which more than doubles `pnpm lint` on two cores; `tsc` already checks the types.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  { ignores: ['**/dist/', 'packs/', 'coverage/', '.vitest/', 'tmp/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // Prettier wraps code at 120 columns; this catches what it does not wrap, mostly comments.
      'max-len': [
        'error',
        { code: 140, ignoreUrls: true, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // A patched method needs both its own `this` (the SDK object) and the instrumentation's, as in
      // OpenTelemetry's instrumentations; the alias is named for what it holds.
      '@typescript-eslint/no-this-alias': ['error', { allowedNames: ['instrumentation'] }],
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
