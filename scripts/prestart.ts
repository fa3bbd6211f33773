/**
 * `npm start`'s first step: builds what is missing or stale, so `npm install && npm start` serves the
 * compiled code (bin/wishpay.js runs dist/ when it is current) and the dashboard. A build that fails
 * (a work-in-progress type error) does not stop the start: the command then runs the sources through tsx.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { isBuildCurrent, ROOT } from '../bin/build-state.js'

function npmRun(script: string): boolean {
  return spawnSync('npm', ['run', '--silent', script], { cwd: ROOT, stdio: 'inherit' }).status === 0
}

if (!isBuildCurrent()) {
  process.stderr.write('Compiling the server into dist/ (npm run build:server)…\n')
  if (!npmRun('build:server')) process.stderr.write('The build failed: starting from the TypeScript sources through tsx instead.\n')
}
if (!fs.existsSync(path.join(ROOT, 'dashboard/dist/index.html')) && !npmRun('build:dashboard')) {
  process.stderr.write('The dashboard did not build: /dashboard will answer 404 until `npm run build:dashboard` succeeds.\n')
}
