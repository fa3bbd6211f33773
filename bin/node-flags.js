// V8 flags the server runs with (docs/performance.md, "Peak RSS" and the seventh pass): an 8 MB semi-space
// keeps the young generation at 16 MB instead of the 32 MB it grows to (4 MB saved about 9 MB of RSS but
// doubled the scavenges, a third of a PostgreSQL payment's CPU), and a 512 MB old space (about 10x the live heap)
// stops V8 from growing the heap to several times what it holds, as it does under a multi-GB limit.
// --no-maglev (thirty-fourth pass): Node 24 and later run V8's Maglev tier between the baseline compiler and
// TurboFan (Node 20 and 22 ship it off); on Node 24 it held 8-17 MB more at the peak of short runs and its
// background compiles cost 5-7 % more instructions a request, for the same code once warm.
// Node reads them only at start, so they are repeated where node is started: bin/wishpay.js's first line,
// package.json's start script, the Dockerfile's ENTRYPOINT and the bench; test/unit/node-flags.test.ts
// checks that those places agree with this list.
export const SERVER_NODE_FLAGS = ['--max-semi-space-size=8', '--max-old-space-size=512', '--no-maglev']
