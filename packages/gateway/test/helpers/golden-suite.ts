import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GOLDEN_CASES, GOLDEN_GROUPS, runGoldenCase } from './golden-rig.js';
import type { GoldenRun } from './golden-rig.js';

// The golden record of every lab scenario (issue 40), golden/findings.json, and the suite that holds a
// group of its cases to it. `pnpm golden:update` runs the suites one after another with
// RESUMEWATCH_GOLDEN_UPDATE=1: each writes its cases into the record instead of comparing them.

const GOLDEN = join(import.meta.dirname, '../golden/findings.json');
const UPDATE = process.env.RESUMEWATCH_GOLDEN_UPDATE === '1';

const readGolden = (): Record<string, GoldenRun> =>
  existsSync(GOLDEN) ? (JSON.parse(readFileSync(GOLDEN, 'utf8')) as Record<string, GoldenRun>) : {};

/** Runs every case of `group` and compares what the gateway and serve reported with the golden record. */
export function goldenSuite(group: keyof typeof GOLDEN_GROUPS): void {
  const cases = GOLDEN_GROUPS[group];
  const golden = UPDATE ? {} : readGolden();
  const recorded: Record<string, GoldenRun> = {};

  beforeAll(() => {
    // A first attempt's server span joins the client's trace only under a W3C propagator, as the
    // OpenTelemetry Node SDK registers it (e2e-modern, e2e-tasks of the daemon).
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  });
  afterAll(() => {
    propagation.disable();
    if (!UPDATE || Object.keys(recorded).length !== cases.length) return;
    // The whole record, in the cases' order: this group's cases new, the others' as they were.
    const merged = { ...readGolden(), ...recorded };
    const record = Object.fromEntries(GOLDEN_CASES.flatMap((c) => (merged[c.id] ? [[c.id, merged[c.id]]] : [])));
    writeFileSync(GOLDEN, `${JSON.stringify(record, null, 2)}\n`);
  });

  describe(`the golden findings of the lab scenarios (${group}), at the gateway and at serve`, () => {
    it.skipIf(UPDATE)('the record holds every case of the lab, and no other', () => {
      expect(Object.keys(golden)).toEqual(GOLDEN_CASES.map((c) => c.id));
    });

    it.each(cases)('$id', { timeout: 90_000 }, async (c) => {
      const run = await runGoldenCase(c);
      if (UPDATE) {
        recorded[c.id] = run;
        return;
      }
      const want = golden[c.id];
      expect(want, `${c.id}: no record in golden/findings.json (pnpm golden:update)`).toBeDefined();
      // One comparison per vantage point, each named, all made: a diff says who changed what.
      const at = (where: string) => `${c.id}, ${where}, against golden/findings.json`;
      expect.soft(run.gateway.findings, at("the gateway's findings")).toEqual(want!.gateway.findings);
      expect.soft(run.gateway.metrics, at("the gateway's /metrics counters")).toEqual(want!.gateway.metrics);
      for (const encoding of ['json', 'protobuf'] as const)
        for (const side of ['client', 'server'] as const)
          expect
            .soft(run.serve[encoding][side], at(`serve's findings over OTLP/${encoding}, ${side} spans`))
            .toEqual(want!.serve[encoding][side]);
    });
  });
}
