/** The `service` of a span whose resource names no service. */
export const UNKNOWN_SERVICE = 'unknown_service';
/** The one `service` value that stands for every service past a cap (the core's interning, the metrics' label). */
export const OTHER_SERVICE = 'other';
/**
 * Services the detection core keeps apart: a service is part of a request's identity and is named in
 * its findings; spans of any further service are tracked, and reported, as `other`. Not an option: it
 * only bounds the core's memory (a name and a number each), and it is large so that findings keep their
 * service's name in any real fleet.
 */
export const MAX_CORE_SERVICES = 4096;
/** The `server` of a server-defect finding whose span names no server address (ATTR_SERVER_ADDRESS). */
export const UNKNOWN_SERVER = 'unknown_server';
