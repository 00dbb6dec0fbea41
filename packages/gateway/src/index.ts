export { startGateway, GATEWAY_DEFAULTS, type GatewayOptions, type RunningGateway } from './gateway.js';
export { main as runGatewayCli, GATEWAY_HELP } from './cli.js';
export { registerGatewayTraceContext } from './trace-context.js';
