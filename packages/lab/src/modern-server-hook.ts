import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { UsageError } from './cli-errors.js';
import type { ModernLabServerOptions } from './modern/server.js';

/** The environment variable naming the module whose `instrumentMcpServer` decorates the in-process v2 servers. */
const MODERN_SERVER_HOOK_ENV = 'RESUMEWATCH_LAB_V2_SERVER_HOOK';

type Decorate = NonNullable<ModernLabServerOptions['decorateServer']>;

/**
 * RESUMEWATCH_LAB_V2_SERVER_HOOK: a module (a path or a URL) whose `instrumentMcpServer(server)` export
 * the 2026-07-28 scenarios apply to each v2 server they start in process, e.g. the instrumentation's
 * dist/index.js. The register hook patches the SDK 1.x server transports only, and the lab does not
 * depend on the instrumentation (whose tests run the lab): the module is named, not imported. Unset:
 * the servers stay as they are.
 */
export async function modernServerFromEnv(
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ decorateServer: Decorate } | undefined> {
  const specifier = env[MODERN_SERVER_HOOK_ENV]?.trim();
  if (!specifier) return undefined;
  const module = (await import(isAbsolute(specifier) ? pathToFileURL(specifier).href : specifier).catch(
    (error: unknown) => {
      throw new UsageError(
        `${MODERN_SERVER_HOOK_ENV}: cannot import "${specifier}" (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`,
      );
    },
  )) as { instrumentMcpServer?: unknown };
  const instrument = module.instrumentMcpServer;
  if (typeof instrument !== 'function')
    throw new UsageError(`${MODERN_SERVER_HOOK_ENV}: "${specifier}" exports no instrumentMcpServer function`);
  return { decorateServer: (server) => (instrument as Decorate)(server) };
}
