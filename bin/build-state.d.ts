/** Types of build-state.js, for scripts/prestart.ts and the tests. */
export declare const ROOT: string
/** Whether `root`'s dist/ was stamped by a finished build after every file of its src/ last changed. */
export declare function isBuildCurrent(root?: string): boolean
export declare function stampBuild(root?: string): void
