import preact from "@preact/preset-vite";
import { defineConfig } from "vite";

/**
 * The dashboard (issue 7): a Preact single-page app built into `dist/dashboard`, which the
 * `cairn dev` server serves at `/`. Build from the repository root with `vite build dashboard`.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: "./",
  plugins: [preact()],
  build: {
    outDir: "../dist/dashboard",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    reportCompressedSize: true,
  },
  server: {
    // `vite dashboard` during development: the API runs elsewhere (`cairn dev` on 4545 by default).
    // changeOrigin: the API answers only to its own Host (a server without tokens: loopback on its
    // port); the browser's Sec-Fetch-Site (same-origin with this dev server) passes as it is.
    proxy: { "/api": { target: process.env.CAIRN_API ?? "http://127.0.0.1:4545", changeOrigin: true } },
  },
});
