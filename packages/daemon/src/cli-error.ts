/**
 * The one line a CLI of the workspace (`resumewatch`, `resumewatch gateway`) prints for an error that
 * is not the user's mistake: the error's name and first line, the stack only with RESUMEWATCH_DEBUG=1.
 */
export function unexpectedErrorLine(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  if (process.env.RESUMEWATCH_DEBUG === '1') return e.stack ?? e.message;
  return `${e.name}: ${e.message.split('\n')[0]} (RESUMEWATCH_DEBUG=1 prints the stack)`;
}
