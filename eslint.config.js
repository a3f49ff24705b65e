import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '.build-*/**', 'node_modules/**', '.run/**', '.tap/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // the quota dashboard's scripts run in the browser, as modules (src/dashboard/index.html)
    files: ['src/dashboard/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: { window: 'readonly', document: 'readonly', fetch: 'readonly', URL: 'readonly', URLSearchParams: 'readonly', Node: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' },
    },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
);
