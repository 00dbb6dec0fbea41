// Paths of the metrics listener of `resumewatch serve` and `resumewatch gateway`: part of the contract
// (scrape configs, health checks and links name them).

export const ROUTE_METRICS = '/metrics';
export const ROUTE_HEALTHZ = '/healthz';
export const ROUTE_FINDINGS = '/findings';
/** The page: findings and their request timelines, for people (HTML). */
export const ROUTE_PAGE = '/';
/** What the page shows, as JSON: bounded like ROUTE_FINDINGS, behind the same token. */
export const ROUTE_PAGE_DATA = '/page.json';
/**
 * One finding's request timeline, as JSON (`?key=` the request key ROUTE_PAGE_DATA lists for it): the live
 * page fetches a timeline when a finding is opened, so no answer draws more than one request's evidence.
 */
export const ROUTE_PAGE_TIMELINE = '/page/timeline';
