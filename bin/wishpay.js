#!/usr/bin/env node
// The `wishpay` command runs the TypeScript sources through tsx, a runtime dependency,
// so there is no build step between a checkout and a working CLI.
import { register } from 'tsx/esm/api'

register()
await import('../src/cli.ts')
