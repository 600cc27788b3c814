import { defineConfig } from 'vitest/config';

// The portal is built into static/dist, which cairnd embeds (see embed.go).
// In development, `npm run dev` proxies the API to the cairnd named by
// CAIRN_API (default http://127.0.0.1:8080).
const api = process.env.CAIRN_API ?? 'http://127.0.0.1:8080';

export default defineConfig({
  esbuild: { jsx: 'automatic' },
  build: {
    outDir: 'static/dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 600,
  },
  server: {
    proxy: {
      '/graphql': { target: api, ws: true, changeOrigin: true },
    },
  },
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
  },
});
