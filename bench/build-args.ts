/**
 * The builds named on the command line of bench/compare-builds.ts and bench/instructions.ts: each a
 * build's output directory (a copy of dist/ inside this checkout, so that it finds node_modules), with
 * environment variables of its own after commas (`dist-before,NAME=VALUE`).
 */
export function parseBuilds(given: readonly string[]): Array<{ name: string, dir: string, env: Record<string, string> }> {
  return given.map((arg) => {
    const [dir, ...assignments] = arg.split(',')
    const env = Object.fromEntries(assignments.map((a) => {
      const at = a.indexOf('=')
      if (at < 1) throw new Error(`${arg}: give an environment variable as NAME=VALUE, not ${a}`)
      return [a.slice(0, at), a.slice(at + 1)]
    }))
    return { name: arg, dir: dir!, env }
  })
}
