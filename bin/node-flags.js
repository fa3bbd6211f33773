// V8 flags the server runs with (docs/performance.md, "Peak RSS"): a 4 MB semi-space keeps the young
// generation at 8 MB instead of the 32 MB it grows to, and a 512 MB old space (about 10x the live heap)
// stops V8 from growing the heap to several times what it holds, as it does under a multi-GB limit.
// Node reads them only at start, so they are repeated where node is started: bin/wishpay.js's first line,
// package.json's start script, the Dockerfile's ENTRYPOINT and the bench; test/unit/node-flags.test.ts
// checks that those places agree with this list.
export const SERVER_NODE_FLAGS = ['--max-semi-space-size=4', '--max-old-space-size=512']
