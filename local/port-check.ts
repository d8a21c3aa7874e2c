import { createServer } from 'node:net';

/**
 * Why a port of 127.0.0.1 cannot be listened on (busy, or refused), in the words the local
 * commands print, naming the variable that chooses it; undefined when it is free.
 */
export function portProblem(port: number, variable: string): Promise<string | undefined> {
  return new Promise((done) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => {
      done(
        error.code === 'EADDRINUSE'
          ? `Port ${port} is already in use: stop what is using it, or choose another with ${variable}=<port>.`
          : `Cannot listen on port ${port} (${variable}): ${error.message}`,
      );
    });
    probe.listen(port, '127.0.0.1', () => {
      probe.close(() => {
        done(undefined);
      });
    });
  });
}
