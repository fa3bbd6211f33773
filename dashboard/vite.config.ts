import { fileURLToPath } from 'node:url'
import preact from '@preact/preset-vite'
import { defineConfig } from 'vite'

/** The dashboard: built into dashboard/dist and served at /dashboard/ by src/http/dashboard.ts. */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/dashboard/',
  plugins: [preact()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // No data: URIs and no inline code: the page's Content-Security-Policy allows files from the server only.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
  // `npx vite --config dashboard/vite.config.ts`: a development server with hot reload at
  // http://localhost:5173/dashboard/, the API proxied to a server started with `npm start`.
  server: { proxy: { '^/(wishes|mandates|payments|events|webhook_endpoints)': 'http://127.0.0.1:3000' } },
})
