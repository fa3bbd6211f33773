/* global process, console */
// Renders a V8 .cpuprofile (node --cpu-prof) as a flame graph SVG and prints self and inclusive time by
// area of the request path. No converter on npm reads .cpuprofile into SVG (0x and flamebearer read
// other inputs or print text), so this is the small one used for docs/profiles/.
// Usage: node docs/profiles/flamegraph.mjs <in.cpuprofile> <out.svg> [title]
import { readFileSync, writeFileSync } from 'node:fs'

const [input, output, title = input] = process.argv.slice(2)
const profile = JSON.parse(readFileSync(input, 'utf8'))
const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const parent = new Map()
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)

// Time per node, each sample weighted by the time to the next one. Start-up (module loading, schema
// compilation) is left out: samples count from the first request the server parses.
const selfUs = new Map()
const serving = new Set(profile.nodes.filter((node) => node.callFrame.functionName === 'parserOnIncoming').map((node) => node.id))
const underServing = (id) => { for (let at = id; at !== undefined; at = parent.get(at)) if (serving.has(at)) return true; return false }
const first = profile.samples.findIndex(underServing)
profile.samples.forEach((id, i) => { if (i >= first) selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0)) })

const short = (url) => url.replace(/^file:\/\/\/?/, '').replace(/.*\/node_modules\//, '').replace(/.*\/(dist|src)\//, '$1/')
const frameName = (node) => {
  const { functionName, url, lineNumber } = node.callFrame
  return `${functionName || '(anonymous)'}${url ? ` ${short(url)}:${lineNumber + 1}` : ''}`
}

/** The area a frame belongs to, first match wins (order: ours before the libraries they call). */
const AREAS = [
  ['auth (ours)', /(dist|src)\/http\/auth|accounts\/(service|keys)/],
  ['rate limit', /http\/rate-limit|@fastify\/rate-limit|toad-cache/],
  ['logging (pino)', /pino|sonic-boom|fast-redact|logRequest .*request-context|logger\.js/],
  ['metrics (prom-client)', /prom-client|http\/metrics/],
  ['validation (ajv)', /ajv|http\/validation|text-guard/],
  ['serialisation', /fast-json-stringify|serializ|JSON\.stringify|stringify/],
  // Kysely's SQLite driver calls better-sqlite3's native statements: their time is its self time.
  ['SQLite (better-sqlite3)', /better-sqlite3|db\/sqlite|sqlite-driver/],
  ['Kysely', /kysely/],
  ['Fastify routing and hooks', /fastify|find-my-way|avvio|light-my-request/],
  ['socket writes', /writev|writeGeneric|_writeRaw|Socket\._write|handleWriteReq|onWriteComplete|afterWriteDispatched/],
  ['HTTP parsing (node)', /parserOnHeadersComplete|parserOnIncoming|_http_common|_http_incoming/],
  ['garbage collector', /garbage collector/],
  ['idle', /\(idle\)/],
]
const areaOf = (node) => {
  const name = `${node.callFrame.functionName} ${node.callFrame.url}`
  for (const [area, pattern] of AREAS) if (pattern.test(name)) return area
  return undefined
}

const stackOf = (id) => {
  const stack = []
  for (let at = id; at !== undefined; at = parent.get(at)) stack.push(byId.get(at))
  return stack.reverse().slice(1) // without (root)
}

// Folded stacks, and per area: self (the innermost frame with an area) and inclusive (any frame).
const folded = new Map()
const self = new Map()
const inclusive = new Map()
let total = 0
let busy = 0
for (const [id, us] of selfUs) {
  const stack = stackOf(id)
  total += us
  const leaf = stack.at(-1)
  if (leaf && !/\((idle|program)\)/.test(leaf.callFrame.functionName)) busy += us
  const key = stack.map(frameName).join(';')
  folded.set(key, (folded.get(key) ?? 0) + us)
  let selfArea
  for (let i = stack.length - 1; i >= 0 && selfArea === undefined; i--) selfArea = areaOf(stack[i])
  self.set(selfArea ?? 'other', (self.get(selfArea ?? 'other') ?? 0) + us)
  for (const area of new Set(stack.map(areaOf).filter(Boolean))) inclusive.set(area, (inclusive.get(area) ?? 0) + us)
}

// The flame graph: one rectangle per frame, width by time, frames under 0.05 % merged away.
const tree = { name: 'all', value: 0, children: new Map() }
for (const [key, us] of folded) {
  if (/\(idle\)$/.test(key)) continue
  let node = tree
  node.value += us
  for (const name of key.split(';')) {
    let child = node.children.get(name)
    if (!child) node.children.set(name, child = { name, value: 0, children: new Map() })
    child.value += us
    node = child
  }
}
const width = 1600
const rowHeight = 16
const minUs = tree.value * 0.0005
const rects = []
let depthMax = 0
const esc = (text) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
const hue = (name) => (/dist\//.test(name) ? 25 : /node_modules|^[^ ]+ [a-z@]/.test(name) ? 45 : 0)
function layout(node, x, depth) {
  depthMax = Math.max(depthMax, depth)
  const w = (node.value / tree.value) * width
  const pct = ((node.value / tree.value) * 100).toFixed(2)
  const label = w > 40 ? esc(node.name.slice(0, Math.floor(w / 6.5))) : ''
  rects.push({ x, depth, w, title: `${esc(node.name)} (${pct} %)`, label, h: hue(node.name) })
  let at = x
  for (const child of [...node.children.values()].sort((a, b) => a.name.localeCompare(b.name))) {
    if (child.value < minUs) continue
    layout(child, at, depth + 1)
    at += (child.value / tree.value) * width
  }
}
layout(tree, 0, 0)
const height = (depthMax + 3) * rowHeight
const body = rects.map(({ x, depth, w, title: t, label, h }) => {
  const y = height - (depth + 1) * rowHeight
  const light = 55 + ((x * 7) % 20)
  return `<g><title>${t}</title><rect x="${x.toFixed(1)}" y="${y}" width="${Math.max(w - 0.5, 0.1).toFixed(1)}" height="${rowHeight - 1}" fill="hsl(${h},85%,${light}%)"/>${label ? `<text x="${(x + 3).toFixed(1)}" y="${y + 11}">${label}</text>` : ''}</g>`
}).join('\n')
writeFileSync(output, `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="monospace" font-size="10">
<text x="4" y="12" font-size="12">${esc(title)}: busy ${(busy / 1000).toFixed(0)} ms of ${(total / 1000).toFixed(0)} ms sampled (idle left out); hover a frame for its share</text>
${body}
</svg>
`)

const pct = (us) => `${((us / busy) * 100).toFixed(1)} %`
console.log(`| area | self | inclusive |\n|---|---|---|`)
const names = [...new Set([...self.keys(), ...inclusive.keys()])].filter((a) => a !== 'idle')
names.sort((a, b) => (inclusive.get(b) ?? self.get(b) ?? 0) - (inclusive.get(a) ?? self.get(a) ?? 0))
for (const area of names) console.log(`| ${area} | ${pct(self.get(area) ?? 0)} | ${area === 'other' ? '' : pct(inclusive.get(area) ?? 0)} |`)
console.log(`\nbusy ${(busy / 1000).toFixed(0)} ms, sampled ${(total / 1000).toFixed(0)} ms`)
const topSelf = new Map()
for (const [id, us] of selfUs) { const name = frameName(byId.get(id)); topSelf.set(name, (topSelf.get(name) ?? 0) + us) }
console.log('\ntop self:')
for (const [name, us] of [...topSelf].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${pct(us).padStart(8)}  ${name}`)
