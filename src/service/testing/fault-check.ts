import { isProblemCode, PROBLEM_CODES, type ProblemCode } from '../../protocol/problem.js';
import { ServiceError } from '../contract/problems.js';
import { ASSISTANT_TOOLS, isAssistantTool } from '../contract/assistant.js';
import { commonProblems, ROUTES, type RouteSpec } from '../contract/routes.js';
import type { z } from 'zod';
import { FaultActionProblem, FaultMatchOperation, FaultMatchPath, type FaultRuleInput } from './contract/test-helpers.js';

// Whether a fault rule makes sense for the routes it selects: its own module, apart from the
// rules kept in order with their counts (faults.ts), which call it once per rule made.

/** The codes a route can answer: its own and those of its auth and body (spec 7), as the document lists them. */
export function answerableCodes(route: RouteSpec): ReadonlySet<ProblemCode> {
  return new Set([...route.problems, ...commonProblems(route)]);
}

/** Routes a rule may match: every route of the contract but the test helpers (a rule must not lock its maker out). */
export function faultableRoutes(routes: readonly RouteSpec[] = ROUTES): RouteSpec[] {
  return routes.filter((route) => route.tag !== 'Test helpers');
}

/**
 * What a fault rule may name, as closed lists: the operationIds and path templates of the routes it may
 * match, the assistant tools that perform one of them, and the codes one of them can answer. The document
 * writes them as the enums of `match.operation`, `match.path` and `action.problem`; `checkFaultRule`
 * refuses a name outside them (and a code the matched routes cannot all answer).
 * @example faultRuleNames().paths // ['/v1/videos', '/v1/videos/batch', '/v1/videos/{id}', …]
 */
export function faultRuleNames(routes: readonly RouteSpec[] = ROUTES): { operations: string[]; paths: string[]; problems: ProblemCode[] } {
  const faultable = faultableRoutes(routes);
  const operations = faultable.map((route) => route.operationId);
  const tools = Object.entries(ASSISTANT_TOOLS).filter(([, performs]) => operations.includes(performs)).map(([tool]) => tool);
  return {
    operations: [...operations, ...tools],
    paths: [...new Set(faultable.map((route) => route.path))],
    problems: [...new Set(faultable.flatMap((route) => [...answerableCodes(route)]))].sort(),
  };
}

let closedOfRoutes: ReadonlyMap<z.ZodType, readonly string[]> | undefined;

/**
 * `faultRuleNames` keyed by the schemas that take them (`match.operation`, `match.path`, `action.problem`):
 * the `closedLists` option of `openApiDocument`, which the composition root and `cliphook openapi` give so
 * the document writes each as its enum. Made once (the route table does not change).
 * @example openApiDocument({ closedLists: faultClosedLists() })
 */
export function faultClosedLists(): ReadonlyMap<z.ZodType, readonly string[]> {
  if (closedOfRoutes) return closedOfRoutes;
  const names = faultRuleNames();
  return (closedOfRoutes = new Map<z.ZodType, readonly string[]>([[FaultMatchOperation, names.operations], [FaultMatchPath, names.paths], [FaultActionProblem, names.problems]]));
}

/** The 400 `invalid_parameter` of a rule, naming the member at fault and, where known, what it may be. */
export const refuse = (parameter: string, detail: string, allowed?: readonly unknown[]) =>
  new ServiceError('invalid_parameter', detail, { extra: { parameter, ...(allowed ? { allowed_values: allowed } : {}) } });

/**
 * The routes a rule's `match` selects, after checking that the rule makes sense for them: an operation or
 * a path template of the contract (not a test helper), a method the path takes, and a `problem` that
 * every selected route can answer (and `retry_after` only with a retryable one). Throws the 400
 * `invalid_parameter` that names what is wrong and lists what is allowed.
 * @example checkFaultRule({ match: { operation: 'getVideo' }, action: { problem: 'upstream_busy' } }) // [the getVideo route]
 */
export function checkFaultRule(input: Pick<FaultRuleInput, 'match' | 'action'>, routes: readonly RouteSpec[] = ROUTES): RouteSpec[] {
  const faultable = faultableRoutes(routes);
  const names = faultRuleNames(routes);
  const { operation, method, path } = input.match;
  let selected: RouteSpec[];
  if (operation !== undefined) {
    // An assistant tool is faulted as the operation it performs (its codes), on /mcp only.
    const performs = isAssistantTool(operation) ? ASSISTANT_TOOLS[operation] : operation;
    selected = faultable.filter((route) => route.operationId === performs);
    if (selected.length === 0) throw refuse('match.operation', `No operation ${operation} to fault: it is an operationId of the document, not a test helper, or an assistant tool.`, names.operations);
  } else {
    if (path !== undefined && !names.paths.includes(path)) throw refuse('match.path', `No path template ${path} to fault: use one of the document's paths, as /v1/videos/{id}.`, names.paths);
    selected = faultable.filter((route) => (method === undefined || route.method === method) && (path === undefined || route.path === path));
    if (selected.length === 0) {
      const methods = faultable.filter((route) => route.path === path).map((route) => route.method);
      throw refuse('match.method', `${path} does not take ${method}; it takes ${methods.join(', ')}.`, methods);
    }
  }
  const code = input.action.problem;
  if (code !== undefined) {
    const allowed = [...selected.map(answerableCodes).reduce((common, codes) => new Set([...common].filter((each) => codes.has(each))))].sort();
    if (!isProblemCode(code) || !allowed.includes(code)) {
      const cannot = isProblemCode(code) ? selected.find((route) => !answerableCodes(route).has(code)) : undefined;
      const why = cannot ? `${cannot.method} ${cannot.path} (${cannot.operationId}) never answers ${code}` : `${code} is not a code of spec section 7`;
      throw refuse('action.problem', `${why}; the matched route${selected.length > 1 ? 's' : ''} can answer ${allowed.join(', ')}.`, allowed);
    }
    if (input.action.retry_after !== undefined && !PROBLEM_CODES[code].retryable) {
      throw refuse('action.retry_after', `retry_after goes with a retryable code; ${code} is not retryable (spec 7).`);
    }
  }
  return selected;
}
