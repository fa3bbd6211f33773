/**
 * The builds named on the command line of bench/compare-builds.ts and bench/instructions.ts: each a
 * build's output directory (a copy of dist/ inside this checkout, so that it finds node_modules), with
 * environment variables of its own after commas (`dist-before,NAME=VALUE`). `NODE_FLAGS=` is not one:
 * its space-separated flags go to node after the server's own, where the later flag wins
 * (`dist,NODE_FLAGS=--maglev` undoes the server's `--no-maglev`), since NODE_OPTIONS takes only a few
 * of V8's flags.
 */
export function parseBuilds(given: readonly string[]): Array<{ name: string, dir: string, env: Record<string, string>, nodeFlags: string[] }> {
  return given.map((arg) => {
    const [dir, ...assignments] = arg.split(',')
    const env = Object.fromEntries(assignments.map((a) => {
      const at = a.indexOf('=')
      if (at < 1) throw new Error(`${arg}: give an environment variable as NAME=VALUE, not ${a}`)
      return [a.slice(0, at), a.slice(at + 1)]
    }))
    const nodeFlags = (env.NODE_FLAGS ?? '').split(' ').filter(Boolean)
    delete env.NODE_FLAGS
    return { name: arg, dir: dir!, env, nodeFlags }
  })
}
