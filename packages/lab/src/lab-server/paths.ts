import { isLabStoreVariant } from '../store-variants.js';
import type { LabStoreVariant } from '../store-variants.js';

export const MCP_PATH = '/mcp';
export const CONTROL_PATH = '/control';
/** Header pair the lab sends to itself to re-initialize a known session after a restart. */
export const RESTORE_TOKEN_HEADER = 'x-resumewatch-lab-restore-token';
export const RESTORE_SESSION_HEADER = 'x-resumewatch-lab-restore-session';

/** The store variant an MCP path serves (`/mcp` or `/mcp/<variant>`), undefined for other paths. */
export function storeVariantOfPath(path: string, defaultVariant: LabStoreVariant): LabStoreVariant | undefined {
  if (path === MCP_PATH) return defaultVariant;
  if (!path.startsWith(`${MCP_PATH}/`)) return undefined;
  const name = path.slice(MCP_PATH.length + 1);
  return isLabStoreVariant(name) ? name : undefined;
}
