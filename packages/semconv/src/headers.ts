// HTTP headers of resumewatch's own (never the protocol's `Mcp-` names).

/**
 * On a JSON answer that created a task (2025-11-25 `result.task.taskId`, 2026-07-28 `resultType: "task"`),
 * `resumewatch gateway` names the task: a load balancer in front of replicas learns from it which replica
 * saw the creation, and routes the task's follow-ups (whose `Mcp-Name` is the task id, 2026-07-28) there
 * (deploy/gateway/haproxy.cfg's stick table). Lower-case, as Node gives header names.
 */
export const HEADER_TASK_ID = 'x-resumewatch-task-id';
