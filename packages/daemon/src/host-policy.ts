import { isIP } from 'node:net';
import { GatewayRefusal } from '@resumewatch/semconv';

/*
 * Which `Host` and `Origin` a listener answers, against DNS rebinding and cross-site requests. A page on
 * attacker.example whose name the attacker re-points at 127.0.0.1 reaches a loopback listener as
 * same-origin to the page: the browser sends `Host: attacker.example`, and only that header tells it
 * from a local client. One check for every listener that serves a browser-reachable answer: the
 * gateway's proxy, the metrics port (the page, /page.json, /findings, /metrics) of serve and gateway,
 * and serve's OTLP receivers (HTTP: `Host` and `Origin`; gRPC: the call's `:authority`).
 *
 * - Bound to a loopback address (127.0.0.0/8, ::1, localhost) with no --allowed-hosts: only loopback
 *   names (`localhost`, `127.0.0.1`, `[::1]`, and the bound address), any port, as the MCP SDK's
 *   `localhostHostValidation`. A request without `Host` is refused.
 * - Bound to any other address with no --allowed-hosts: any `Host` (a load balancer, a container network
 *   or a DNS name the gateway cannot know decides the name), which does not stop DNS rebinding.
 * - --allowed-hosts replaces the default: each entry a name (any port) or name:port (that port only);
 *   `*` accepts any.
 * - `Origin`, when present, must be the request's own origin (scheme, `Host` name and port), or one of
 *   --allowed-origins, or, without --allowed-origins, name an allowed host (a loopback name by default
 *   on loopback). `*` accepts any. An opaque origin (`null`) is refused unless `*`.
 */

/** The names of the loopback a browser uses, as the MCP SDK's `localhostHostValidation` lists them. */
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];
/** An allowed-list entry that accepts any value. */
const ANY = '*';
/** Longest part of a refused header echoed in the answer. */
const ECHO_CHARS = 100;

/** A refusal of `Host` or `Origin`: the reason (counted by the gateway) and one line saying why. */
export interface HostRefusal {
  reason: typeof GatewayRefusal.HOST_NOT_ALLOWED | typeof GatewayRefusal.ORIGIN_NOT_ALLOWED;
  message: string;
}

/** Checks a request's `Host` and `Origin` headers: undefined when it may be answered. */
export type HostCheck = (host: string | undefined, origin: string | undefined) => HostRefusal | undefined;

export interface HostPolicyOptions {
  /** The address the listener binds to: a loopback one makes loopback names the default. */
  bindHost: string;
  /** Names (`name` or `name:port`) the `Host` may carry; `*`: any. Default: see above. */
  allowedHosts?: readonly string[] | undefined;
  /** Origins (`scheme://name[:port]`) a cross-origin request may come from; `*`: any. */
  allowedOrigins?: readonly string[] | undefined;
}

interface HostName {
  hostname: string;
  /** The port as written; '' when none was. */
  port: string;
}

interface HostEntry {
  hostname: string;
  /** undefined: any port. */
  port: string | undefined;
}

interface Origin {
  /** The serialized origin, for comparison with --allowed-origins. */
  key: string;
  hostname: string;
  /** The port, the scheme's default when none was written. */
  port: string;
  /** The scheme's default port: a `Host` without a port names it. */
  defaultPort: string;
}

/** A `Host` value (or an allowed-hosts entry) as a name and port; undefined when it is not one. */
function parseHost(text: string): HostName | undefined {
  // Only `name[:port]`: a path, userinfo or a space would make URL parsing read another name.
  if (text === '' || /[\s/?#@\\]/.test(text)) return undefined;
  let hostname: string;
  try {
    hostname = new URL(`http://${text}`).hostname;
  } catch {
    return undefined;
  }
  const port = /:(\d{1,5})$/.exec(text);
  return { hostname, port: port ? String(Number(port[1])) : '' };
}

/** An `Origin` value (or an allowed-origins entry) when it is an http or https origin and nothing more. */
function parseOrigin(text: string): Origin | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.username || url.password || url.search || url.hash || url.pathname !== '/') return undefined;
  const defaultPort = url.protocol === 'https:' ? '443' : '80';
  return { key: url.origin, hostname: url.hostname, port: url.port || defaultPort, defaultPort };
}

/** True for an address on the loopback: 127.0.0.0/8, ::1 (or an IPv4-mapped 127.x), localhost. */
export function isLoopbackAddress(address: string): boolean {
  const name = parseHost(isIP(address) === 6 ? `[${address}]` : address)?.hostname;
  if (name === undefined) return false;
  return (
    name === 'localhost' ||
    (isIP(name) === 4 && name.startsWith('127.')) ||
    name === '[::1]' ||
    /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(name)
  );
}

/** Throws a TypeError naming the first entry of --allowed-hosts that is neither `*` nor `name[:port]`. */
export function checkAllowedHosts(entries: readonly string[]): void {
  if (entries.length === 0) throw new TypeError('no host name given (use * to accept any)');
  for (const entry of entries)
    if (entry !== ANY && parseHost(entry) === undefined)
      throw new TypeError(`not a host name: "${entry}" (e.g. mcp.example.com, mcp.example.com:8080 or [::1])`);
}

/** Throws a TypeError naming the first entry of --allowed-origins that is neither `*` nor an http(s) origin. */
export function checkAllowedOrigins(entries: readonly string[]): void {
  if (entries.length === 0) throw new TypeError('no origin given (use * to accept any)');
  for (const entry of entries)
    if (entry !== ANY && parseOrigin(entry) === undefined)
      throw new TypeError(`not an origin: "${entry}" (scheme, name and port only, e.g. https://app.example.com)`);
}

function entryOf(text: string): HostEntry {
  const { hostname, port } = parseHost(text)!;
  return { hostname, port: port === '' ? undefined : port };
}

function matches(entries: readonly HostEntry[], hostname: string, port: string): boolean {
  return entries.some((e) => e.hostname === hostname && (e.port === undefined || e.port === port));
}

/** The header as the answer may quote it: bounded, in JSON quotes. */
function quoted(value: string): string {
  return JSON.stringify(value.length > ECHO_CHARS ? `${value.slice(0, ECHO_CHARS)}…` : value);
}

/** The check of one listener, built once (the entries are parsed here, not per request). */
export function hostCheck(options: HostPolicyOptions): HostCheck {
  const given = options.allowedHosts;
  if (given) checkAllowedHosts(given);
  if (options.allowedOrigins) checkAllowedOrigins(options.allowedOrigins);
  const bound = parseHost(isIP(options.bindHost) === 6 ? `[${options.bindHost}]` : options.bindHost)?.hostname;
  const names =
    given ?? (isLoopbackAddress(options.bindHost) ? [...LOOPBACK_NAMES, ...(bound ? [bound] : [])] : undefined);
  // undefined: any Host.
  const hosts = names === undefined || names.includes(ANY) ? undefined : names.map(entryOf);
  const origins = options.allowedOrigins;
  const anyOrigin = origins?.includes(ANY) ?? false;
  const originKeys = new Set(origins?.filter((o) => o !== ANY).map((o) => parseOrigin(o)!.key));

  const refuseHost = (message: string): HostRefusal => ({ reason: GatewayRefusal.HOST_NOT_ALLOWED, message });
  // The last Host checked and its parse (read only): clients send the same Host on every request, and
  // parsing it makes a URL each time.
  let lastHost: string | undefined;
  let lastNamed: HostName | undefined;
  return (host, origin) => {
    let named: HostName | undefined;
    if (host !== undefined) {
      if (host !== lastHost) {
        lastNamed = parseHost(host);
        lastHost = host;
      }
      named = lastNamed;
    }
    if (hosts) {
      if (host === undefined) return refuseHost('no Host header (--allowed-hosts)');
      if (!named || !matches(hosts, named.hostname, named.port))
        return refuseHost(`Host ${quoted(host)} is not allowed (--allowed-hosts)`);
    }
    if (origin === undefined || anyOrigin) return undefined;
    const o = parseOrigin(origin);
    if (o) {
      // Its own origin: the Host's name and port (the scheme's default when the Host names none).
      if (named && o.hostname === named.hostname && o.port === (named.port || o.defaultPort)) return undefined;
      if (origins ? originKeys.has(o.key) : hosts !== undefined && matches(hosts, o.hostname, o.port)) return undefined;
    }
    return {
      reason: GatewayRefusal.ORIGIN_NOT_ALLOWED,
      message: `Origin ${quoted(origin)} is not allowed (--allowed-origins)`,
    };
  };
}
