/**
 * jose, imported on first use: only AP2 mandates, trusted keys and receipts sign or verify, so a
 * server whose clients use none of them (or that already has its receipt key) never loads it
 * (docs/performance.md, thirty-ninth pass; test/unit/lazy-modules.test.ts keeps it so). Lint refuses a
 * value import of jose anywhere else in src/.
 */
let jose: Promise<typeof import('jose')> | undefined
export const loadJose = () => (jose ??= import('jose'))
