// The protocol values of the contract (ResumeOutcome, GuardAction, ReattachTrigger, StreamKind,
// FindingKind, ...) are spelled only in packages/semconv/src/values.ts: every other source file uses
// the constants, so a value renamed in one place cannot drift elsewhere.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as values from '../src/values.js';
import { repoRoot, sourceFiles } from './helpers/source-files.js';

/** Every value of every value set of values.ts, with the constant that holds it. */
function contractValues(): Map<string, string> {
  const out = new Map<string, string>();
  for (const [set, members] of Object.entries(values)) {
    if (members === null || typeof members !== 'object' || Array.isArray(members)) continue;
    for (const [member, value] of Object.entries(members))
      if (typeof value === 'string') out.set(value, `${set}.${member}`);
  }
  return out;
}

/**
 * Places where a word that is also a contract value means something else, recognised by its context:
 * a JSON-RPC member test (`'result' in message`, `'error' in message`) and an event name
 * (`.on('error', …)`, `.once('message', …)`). Nothing else is exempt by context.
 */
const OTHER_VOCABULARY_CONTEXTS: RegExp[] = [
  /(['"])(?:result|error)\1\s+in\s/g,
  /\.(?:on|once|off|emit)\((['"])[a-z_]+\1/g,
];

/**
 * Files that use such a word in its own vocabulary without a context above: `file: [values]`.
 * Each entry says what the word means there.
 */
const OTHER_VOCABULARY: Record<string, { values: string[]; why: string }> = {
  'packages/detector/src/otlp/json-walk.ts': {
    values: ['status'],
    why: 'the OTLP/JSON Span field status, in the expression of a span as exporters write it',
  },
  'packages/lab/src/event-store.ts': {
    values: ['evicted', 'invalid'],
    why: "the lab store's CursorState ('present' | 'evicted' | 'unknown' | 'invalid')",
  },
  'packages/lab/src/lab-server/mcp-request.ts': { values: ['evicted'], why: "the lab store's CursorState" },
  'packages/lab/src/scenarios/listening-replay.ts': {
    values: ['message'],
    why: 'a scenario detail: the replayed event held a JSON-RPC message',
  },
  'packages/lab/src/timeline-format.ts': {
    values: ['request', 'error', 'result'],
    why: 'words of a printed timeline line (the lab does not depend on the contract)',
  },
  'packages/lab/src/mcp-http-client.ts': { values: ['error'], why: "how a body read ended ('clean' | 'error')" },
  'packages/lab/src/scenarios/recording-fetch.ts': {
    values: ['error'],
    why: "how a recorded body ended ('clean' | 'error')",
  },
  'packages/wire/src/body-taps.ts': { values: ['error'], why: 'a body stream ending in an error' },
  'packages/wire/src/watched-body.ts': { values: ['error'], why: 'a body stream ending in an error' },
  'packages/wire/src/types.ts': {
    values: ['error'],
    why: "how a response body ended, wire's StreamEnd ('clean' | 'error' | 'abort')",
  },
  'packages/wire/src/observer-state.ts': {
    values: ['error', 'sessions', 'live'],
    why: "a restored stream's end, wire's StreamEnd ('clean' | 'error' | 'abort'); the section's members, written as text in steps",
  },
};

interface Spelling {
  file: string;
  value: string;
}

/** The source with its comments removed (a value named in prose is documentation, not code). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');
}

function spellings(): Spelling[] {
  const known = contractValues();
  const out: Spelling[] = [];
  for (const path of sourceFiles(['packages', 'dashboards/src'])) {
    const file = relative(repoRoot, path);
    if (file.startsWith('packages/semconv/') || file.includes('/test/') || file.includes('/bench/')) continue;
    let text = code(readFileSync(path, 'utf8'));
    for (const context of OTHER_VOCABULARY_CONTEXTS) text = text.replace(context, ' ');
    for (const literal of text.matchAll(/(['"`])([a-z_]+)\1/g)) {
      if (known.has(literal[2]!)) out.push({ file, value: literal[2]! });
    }
  }
  return out;
}

describe('protocol values of the contract', () => {
  const known = contractValues();

  it('finds the value sets', () => {
    expect(known.get('resume_refused')).toBe('GuardAction.RESUME_REFUSED');
    expect(known.get('stream_closed')).toBe('ReattachTrigger.STREAM_CLOSED');
    expect(known.get('listening')).toBe('StreamKind.LISTENING');
    expect(known.get('cursor_lost')).toBe('FindingKind.CURSOR_LOST');
    expect(known.get('session_not_found')).toBe('ResumeOutcome.SESSION_NOT_FOUND');
  });

  it('has no value in two value sets with two meanings it cannot tell apart', () => {
    // `error` is both ResumeOutcome.ERROR and TerminalOutcome.ERROR; every other value is in one set.
    const seen = new Map<string, string[]>();
    for (const [set, members] of Object.entries(values)) {
      if (members === null || typeof members !== 'object' || Array.isArray(members)) continue;
      for (const value of Object.values(members))
        if (typeof value === 'string') seen.set(value, [...(seen.get(value) ?? []), set]);
    }
    expect([...seen].filter(([, sets]) => sets.length > 1)).toEqual([['error', ['ResumeOutcome', 'TerminalOutcome']]]);
  });

  it('is spelled nowhere else, but in the listed other vocabularies', () => {
    const offenders = spellings()
      .filter(({ file, value }) => !OTHER_VOCABULARY[file]?.values.includes(value))
      .map(({ file, value }) => `${file}: '${value}' (use ${known.get(value)})`);
    expect([...new Set(offenders)]).toEqual([]);
  });

  it('lists no exemption that is no longer needed', () => {
    const found = new Set(spellings().map(({ file, value }) => `${file} ${value}`));
    const stale = [
      ...Object.entries(OTHER_VOCABULARY).flatMap(([file, { values: words }]) =>
        words.map((value) => `${file} ${value}`),
      ),
    ].filter((entry) => !found.has(entry));
    expect(stale).toEqual([]);
  });

  it('sees a value spelled in code, and not one named in a comment or a JSON-RPC member test', () => {
    const sample = code("// a `poll` in prose\nconst o = 'poll'; if ('result' in m) x();").replace(
      OTHER_VOCABULARY_CONTEXTS[0]!,
      ' ',
    );
    expect([...sample.matchAll(/(['"`])([a-z_]+)\1/g)].map((m) => m[2])).toEqual(['poll']);
  });
});
