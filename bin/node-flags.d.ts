/** V8 flags the server runs with; see node-flags.js. */
export declare const SERVER_NODE_FLAGS: string[]
