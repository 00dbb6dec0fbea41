import type { ScenarioSummary } from './summary.js';

/** The call both cancellation runs give up (raw and SDK clients): `stream_progress` for 2 s, 40 updates 50 ms apart. */
export const LONG_CALL = { count: 40, delay: 50 };

/** One given-up call: its session, and how many results of it still arrived. */
interface GivenUpCall {
  sessionId: string | undefined;
  terminals: number;
}

/**
 * The counts of a cancellation run, whichever client ran it: two calls given up, each in its own session
 * (the summary names the first), and no resume.
 */
export function cancellationCounts(
  notified: GivenUpCall,
  transportClosed: GivenUpCall,
): Pick<
  ScenarioSummary,
  'sessionId' | 'terminalDeliveries' | 'distinctTerminalStreams' | 'reconnects' | 'resumeStatuses'
> {
  return {
    sessionId: notified.sessionId,
    terminalDeliveries: notified.terminals + transportClosed.terminals,
    distinctTerminalStreams: Number(notified.terminals > 0) + Number(transportClosed.terminals > 0),
    reconnects: 0,
    resumeStatuses: [],
  };
}
