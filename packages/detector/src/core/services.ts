/** The `service` of a span whose resource names no service. */
export const UNKNOWN_SERVICE = 'unknown_service';
/** The one `service` value that stands for every service past a cap (the core's interning, the metrics' label). */
export const OTHER_SERVICE = 'other';
/** The `server` of a server-defect finding whose span names no server address (ATTR_SERVER_ADDRESS). */
export const UNKNOWN_SERVER = 'unknown_server';
