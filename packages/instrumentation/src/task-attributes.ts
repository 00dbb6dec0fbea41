import type { Attributes } from '@opentelemetry/api';
import { isTaskIdMethod } from '@resumewatch/wire';
import type { TaskFacts } from '@resumewatch/wire';
import {
  ATTR_MCP_TASK_GONE,
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TASK_OUTCOME_DELIVERED,
  ATTR_MCP_TASK_POLL_INTERVAL_MS,
  ATTR_MCP_TASK_SHAPE,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_TTL_MS,
  mcpRequestSpanName,
} from './semconv.js';

/**
 * The name of a request span: its method and target, but never a task id (`tasks/get` names its task
 * in its target): a span name passes no id policy, and one per task would be a name per task.
 */
export function requestSpanName(method: string, target: string | undefined): string {
  return mcpRequestSpanName(method, isTaskIdMethod(method) ? undefined : target);
}

/**
 * The task attributes of what an answer or a status notification showed (`TaskFacts` of the wire),
 * into `attributes`: each only when said. The task id only when `withId` (a `tasks/*` request's span has
 * it from its params already). The id policy applies to ATTR_MCP_TASK_ID through the tracer (id-policy.ts).
 */
export function addTaskFacts(attributes: Attributes, facts: TaskFacts, withId: boolean): void {
  if (withId && facts.taskId !== undefined) attributes[ATTR_MCP_TASK_ID] = facts.taskId;
  if (facts.status !== undefined) attributes[ATTR_MCP_TASK_STATUS] = facts.status;
  if (facts.shape !== undefined) attributes[ATTR_MCP_TASK_SHAPE] = facts.shape;
  if (facts.ttlMs !== undefined) attributes[ATTR_MCP_TASK_TTL_MS] = facts.ttlMs;
  if (facts.pollIntervalMs !== undefined) attributes[ATTR_MCP_TASK_POLL_INTERVAL_MS] = facts.pollIntervalMs;
  if (facts.outcomeDelivered) attributes[ATTR_MCP_TASK_OUTCOME_DELIVERED] = true;
  if (facts.gone !== undefined) attributes[ATTR_MCP_TASK_GONE] = facts.gone;
}
