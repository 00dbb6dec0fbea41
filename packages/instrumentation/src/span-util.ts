import { SpanStatusCode } from '@opentelemetry/api';
import type { Attributes, Span } from '@opentelemetry/api';
import type { WireEvent } from '@resumewatch/wire';
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROMPT_NAME,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_MCP_RESOURCE_URI,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ErrorType,
} from './semconv.js';

const EXECUTE_TOOL = 'execute_tool';

/** The tool, prompt or resource a request names, as the MCP and GenAI conventions spell it. */
export function addTargetAttributes(attributes: Attributes, method: string, target: string | undefined): void {
  addTargetName(attributes, method, target);
  if (target !== undefined && method === 'tools/call') attributes[ATTR_GEN_AI_OPERATION_NAME] = EXECUTE_TOOL;
}

/** The name alone (no operation): for spans about a request that are not its operation (its terminal). */
export function addTargetName(attributes: Attributes, method: string, target: string | undefined): void {
  if (target === undefined) return;
  if (method === 'tools/call') {
    attributes[ATTR_GEN_AI_TOOL_NAME] = target;
  } else if (method === 'prompts/get') {
    attributes[ATTR_GEN_AI_PROMPT_NAME] = target;
  } else if (method.startsWith('resources/')) {
    attributes[ATTR_MCP_RESOURCE_URI] = target;
  }
}

/**
 * The version an `initialize` asks for (its `protocolVersion` param): the session era's handshake carries
 * it in its body, before any `MCP-Protocol-Version` header. A refused handshake is counted by it.
 */
export function initializeVersion(method: string, params: unknown): string | undefined {
  if (method !== 'initialize') return undefined;
  const version = (params as { protocolVersion?: unknown } | null | undefined)?.protocolVersion;
  return typeof version === 'string' ? version : undefined;
}

export function setError(span: Span, type: string): void {
  span.setAttribute(ATTR_ERROR_TYPE, type);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

export function errorType(error: unknown): string {
  if (!(error instanceof Error)) return ErrorType.OTHER;
  return error.name === 'AbortError' ? ErrorType.ABORTED : error.name || ErrorType.OTHER;
}

/** A tools/call result with `isError: true` in this event. */
export function isToolError(event: WireEvent, id: string): boolean {
  // Indexed: an array iterator and a result object per message, where the loop runs unoptimized.
  for (let i = 0; i < event.messages.length; i++) {
    const message = event.messages[i]!;
    if (!('result' in message) || String(message.id) !== id) continue;
    return (message.result as { isError?: unknown } | null)?.isError === true;
  }
  return false;
}

/** Wall-clock milliseconds with sub-millisecond precision, for span start and end times. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/** server.address and server.port of the last URL seen: a client talks to one endpoint. */
export class ServerAttributes {
  private url = '';
  private address: string | undefined;
  private port: number | undefined;

  addTo(attributes: Attributes, url: string): void {
    if (url !== this.url) {
      this.url = url;
      try {
        const parsed = new URL(url);
        this.address = parsed.hostname;
        this.port = parsed.port ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
      } catch {
        this.address = undefined;
        this.port = undefined;
      }
    }
    if (this.address !== undefined) attributes[ATTR_SERVER_ADDRESS] = this.address;
    if (this.port !== undefined) attributes[ATTR_SERVER_PORT] = this.port;
  }
}
