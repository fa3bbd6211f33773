/** A markdown table on stdout (the results; progress goes to stderr), ready to paste into the docs. */
export function printTable(title: string, header: string[], lines: string[][], notes: string[] = []): void {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)))
  const format = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`
  const table = [format(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(format)]
  process.stdout.write(`\n${title}\n${table.join('\n')}\n${notes.map((n) => `${n}\n`).join('')}`)
}

/** A cell: empty for no value, `n/a` for a tool that is not installed. */
export const cell = (value: number | string | null | undefined, missing = ''): string => (value === null || value === undefined ? missing : String(value))
