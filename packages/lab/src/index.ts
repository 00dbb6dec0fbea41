export { startLabServer, MCP_PATH, CONTROL_PATH } from './lab-server.js';
export type {
  LabServer,
  LabServerOptions,
  LabServerState,
  RequestLogEntry,
  ReplayLogEntry,
  RestartReport,
  EvictReport,
} from './lab-server.js';
export { BoundedEventStore } from './event-store.js';
export type {
  BoundedEventStoreOptions,
  CursorState,
  EventStoreStats,
  EvictionReason,
  ReplayRecord,
} from './event-store.js';
export { formatEventId, parseEventId } from './event-id.js';
export type { ParsedEventId } from './event-id.js';
export { startFaultProxy } from './fault-proxy.js';
export { refusedPort } from './refused-port.js';
export { startModernLabServer } from './modern/server.js';
export type { ModernLabServer, ModernLabServerOptions, ModernServerEras, ServerExchange } from './modern/server.js';
export { MODERN_TOOL_NAMES } from './modern/tools.js';
export type { ToolExecution } from './modern/tools.js';
export type { AbandonedResponse, CutRecord, CutRule, FaultProxy, FaultProxyOptions } from './fault-proxy.js';
export { LabControlClient } from './control-client.js';
export { McpHttpSession, LAB_PROTOCOL_VERSION, isResponseTo } from './mcp-http-client.js';
export type { FetchLike, StreamEvent, StreamRead, ToolCall } from './mcp-http-client.js';
export { LAB_TOOL_NAMES } from './lab-tools.js';
export { runScenario, scenarioClients } from './scenarios/index.js';
export { SCENARIO_CLIENTS, isScenarioClient } from './scenarios/sdk-clients.js';
export type { ScenarioClient } from './scenarios/sdk-clients.js';
export { connectSdkSession, responsesPerRequest, resumesIn } from './scenarios/sdk-clients.js';
export type { SdkClientKind, SdkSession, SdkSessionOptions } from './scenarios/sdk-clients.js';
export { LAB_STORE_VARIANTS, isLabStoreVariant, storeVariantUrl } from './store-variants.js';
export type { LabStoreVariant } from './store-variants.js';
export { ReplayAllStreamsEventStore } from './replay-all-streams-store.js';
export { RequestIdKeyedEventStore } from './request-keyed-store.js';
export {
  SCENARIO_NAMES,
  LAB_SERVER_SCENARIO_NAMES,
  V2_SERVER_SCENARIO_NAMES,
  TASK_SCENARIO_NAMES,
  TASK_SCENARIO_EXPECTED_FINDINGS,
  LOOP_SCENARIO_NAMES,
  LOOP_SCENARIO_EXPECTED_FINDINGS,
  expectedTaskFindings,
  isScenarioName,
  formatSummary,
} from './scenarios/summary.js';
export type {
  LabServerScenarioName,
  LoopScenarioName,
  ScenarioName,
  ScenarioSummary,
  TaskScenarioName,
} from './scenarios/summary.js';
export type { LoopScenarioOptions, ScenarioOptions, TaskScenarioOptions } from './scenarios/options.js';
export type { LoopClientRequest } from './scenarios/loops.js';
export { LOOP_TOOL, startLoopServer } from './loops/loop-server.js';
export type { LoopGetMode, LoopServer, LoopServerOptions, LoopServerRequest } from './loops/loop-server.js';
export { TASK_TOOL, startTaskLabServer } from './tasks/task-server.js';
export { EXTENSION_TASK_TOOL, ExtensionTasks } from './modern/tasks-extension.js';
export type { ExtensionTaskRequest, ExtensionTasksOptions } from './modern/tasks-extension.js';
export { ExtensionTaskClient } from './modern/tasks-extension-client.js';
export { connectSdkTaskClient, streamTaskCall } from './tasks/sdk-task-client.js';
export type { SdkTaskClient, TaskStreamRun } from './tasks/sdk-task-client.js';
export type { ExtensionAnswer } from './modern/tasks-extension-client.js';
export type { TaskLabServer, TaskLabServerOptions, TaskServerRequest } from './tasks/task-server.js';
export { recordingFetch } from './scenarios/recording-fetch.js';
export type { RecordedRequest } from './scenarios/recording-fetch.js';
export { runLoad } from './load.js';
export type { LoadOptions, LoadReport } from './load.js';
export { RunTimeline } from './timeline.js';
export type { RequestTimeline, TimelineExchange } from './timeline.js';
export { formatRequestTimeline } from './timeline-format.js';
