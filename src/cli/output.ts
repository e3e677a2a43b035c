// The CLI's own stdout lines (help, version, export, config, reports). When the reader goes away
// (`tools-runner help | head -1`), writing raises EPIPE on the stream; without a listener that is an
// uncaught error with a stack trace. Here a closed stdout just ends the output: later lines are
// dropped and the command finishes with its own exit code.

/** A line writer for `stream` that never throws or crashes on a closed pipe. */
export function createLineWriter(stream: NodeJS.WritableStream & { destroyed?: boolean }): { write(line: string): void; closed(): boolean } {
  let closed = false;
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') {
      closed = true;
      return;
    }
    throw error;
  });
  return {
    write(line) {
      if (closed || stream.destroyed) return;
      try {
        stream.write(line + '\n');
      } catch (error) {
        // A synchronous EPIPE (some platforms) means the same: nobody reads any more.
        if ((error as NodeJS.ErrnoException).code !== 'EPIPE') throw error;
        closed = true;
      }
    },
    closed: () => closed,
  };
}
