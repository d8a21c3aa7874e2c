import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react-swc';

/**
 * The console's pages: built into `console/dist`, served under `/console/` (by the local
 * stack's regional servers, and on AWS from S3 behind CloudFront). No inline script, so the
 * pages run under a Content-Security-Policy without `unsafe-inline` scripts.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 1500,
  },
  logLevel: 'warn',
});
