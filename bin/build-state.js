// Whether the compiled build (dist/) is current: `npm run build` stamps it last, so an interrupted build
// has no stamp, and any source file changed after the stamp (an edit, a checkout) makes it stale.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const stampOf = (root) => path.join(root, 'dist', '.build-stamp')

function newestMtimeMs(dir) {
  let newest = 0
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestMtimeMs(file) : fs.statSync(file).mtimeMs)
  }
  return newest
}

export function isBuildCurrent(root = ROOT) {
  let stamped
  try {
    stamped = fs.statSync(stampOf(root)).mtimeMs
  } catch {
    return false
  }
  // A checkout without src/ (an image that ships dist/ only) runs what it has.
  const sources = path.join(root, 'src')
  if (!fs.existsSync(sources)) return true
  return newestMtimeMs(sources) <= stamped
}

export function stampBuild(root = ROOT) {
  fs.writeFileSync(stampOf(root), `${new Date().toISOString()}\n`)
}

// `node bin/build-state.js stamp`: the last step of `npm run build:server`.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url) && process.argv[2] === 'stamp') stampBuild()
