import type { ProblemCode } from '../../protocol/problem.js';
import { ServiceError } from '../contract/problems.js';
import { ASSISTANT_TOOLS, isAssistantTool } from '../contract/assistant.js';
import { ROUTES, type RouteSpec } from '../contract/routes.js';
import { MAX_FAULT_RULES, type FaultRuleInput } from './contract/test-helpers.js';
import { answerableCodes, checkFaultRule, faultableRoutes, refuse } from './fault-check.js';

export { answerableCodes, checkFaultRule, faultableRoutes };

// Fault rules (WireMock's faults, for this service's contract): which requests fail, wait,
// lose their answer or hang. Pure: this module keeps the rules in order with their counts (a rule is
// checked by fault-check.ts) and says which action a request gets; the wiring takes the action (fault-answer.ts builds a problem).

/** What a matched request gets. */
export type FaultAction =
  | { kind: 'problem'; code: ProblemCode; retryAfter: number | null }
  | { kind: 'delay'; ms: number }
  | { kind: 'cut'; when: 'before' | 'after' }
  | { kind: 'hang' };

/** Which requests a rule matches; null matches any. */
export interface FaultMatch {
  operation: string | null;
  method: string | null;
  /** A path template of the contract (`/v1/videos/{id}`). */
  path: string | null;
  account: number | null;
}

/** A rule as the API answers it (contract `FaultRule`). */
export interface FaultRuleView {
  id: string;
  object: 'fault_rule';
  match: FaultMatch;
  times: number | null;
  after: number;
  probability: number | null;
  seed: number;
  action: { problem?: string; retry_after?: number; delay_ms?: number; cut?: 'before' | 'after'; hang?: true };
  hits: number;
  applied: number;
  remaining: number | null;
  created_at: string;
}

/** One request of a contract route, as the wiring knows it once the route is found and the caller known. */
export interface FaultRequest {
  operation: string;
  /** The caller's account; null for a route without a key. */
  account: number | null;
}

/** The rule that acts on a request, its action, and the matched route. */
export interface FaultDecision {
  rule: FaultRuleView;
  action: FaultAction;
  route: RouteSpec;
  /** The codes of the route that name a failing item (`FaultProblemContext.itemCodes`): a batch's own, else none. */
  itemCodes: readonly ProblemCode[];
}

/** Who makes or reads rules: the admin token (`account: null`, every account) or an API key (its own account only). */
export interface FaultCaller {
  account: number | null;
}

/**
 * The most fault rules one account holds (made with its key or by the admin token for it), and the most
 * service-wide rules (the admin's, without `match.account`), so memory stays bounded (20,001 rules take ~40 MB).
 * Defined by the contract, whose document states it.
 */
export { MAX_FAULT_RULES };

/** The edges of `FaultRules`: its clock, the routes, the accounts, its bound. */
export interface FaultRulesOptions {
  /** The time rules are made at (`created_at`). */
  now: () => number;
  /** @default ROUTES */
  routes?: readonly RouteSpec[];
  /** Whether an account exists, for `match.account` given with the admin token. @default every id exists */
  accountExists?: (id: number) => boolean;
  /** The most rules per account, and service-wide; one more is 400 `invalid_parameter`. @default MAX_FAULT_RULES (100) */
  maxRules?: number;
}

interface Rule {
  seq: number;
  id: string;
  match: FaultMatch;
  times: number | null;
  after: number;
  probability: number | null;
  seed: number;
  random: () => number;
  action: FaultAction;
  hits: number;
  applied: number;
  createdAt: number;
}

/**
 * A seeded generator of numbers in [0, 1) (mulberry32): the same seed draws the same sequence, so a
 * rule with a probability fails the same requests on every run.
 * @example const draw = seededRandom(42); draw() // 0.6011037519201636, every time
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function actionOf(action: FaultRuleInput['action']): FaultAction {
  if (action.problem !== undefined) return { kind: 'problem', code: action.problem as ProblemCode, retryAfter: action.retry_after ?? null };
  if (action.delay_ms !== undefined) return { kind: 'delay', ms: action.delay_ms };
  if (action.cut !== undefined) return { kind: 'cut', when: action.cut };
  return { kind: 'hang' };
}

function viewOf(rule: Rule): FaultRuleView {
  const { action } = rule;
  return {
    id: rule.id, object: 'fault_rule', match: { ...rule.match }, times: rule.times, after: rule.after, probability: rule.probability, seed: rule.seed,
    action: action.kind === 'problem' ? { problem: action.code, ...(action.retryAfter === null ? {} : { retry_after: action.retryAfter }) } : action.kind === 'delay' ? { delay_ms: action.ms } : action.kind === 'cut' ? { cut: action.when } : { hang: true },
    hits: rule.hits, applied: rule.applied, remaining: rule.times === null ? null : rule.times - rule.applied, created_at: new Date(rule.createdAt).toISOString(),
  };
}

/**
 * The fault rules of a service, tried in the order they were made.
 * @example
 * const faults = new FaultRules({ now: () => clock.now() });
 * faults.add({ match: { operation: 'getVideo' }, times: 1, action: { problem: 'upstream_busy' } }, { account: null });
 * faults.decide({ operation: 'getVideo', account: 1 })?.action // { kind: 'problem', code: 'upstream_busy', retryAfter: null }
 * faults.decide({ operation: 'getVideo', account: 1 }) // null: the rule was used up
 */
export class FaultRules {
  readonly #now: () => number;
  readonly #routes: readonly RouteSpec[];
  readonly #accountExists: (id: number) => boolean;
  readonly #maxRules: number;
  /**
   * Each account's rules, and the service-wide ones (`null`), in the order made: a request is tried against two
   * lists, not every account's rules.
   */
  readonly #scopes = new Map<number | null, Rule[]>();
  readonly #byId = new Map<string, Rule>();
  /** The rules kept, by id, as a plain map: the fault step reads its size and, with none, calls nothing here. */
  readonly kept: ReadonlyMap<string, unknown> = this.#byId;
  #seq = 0;

  constructor({ now, routes = ROUTES, accountExists = () => true, maxRules = MAX_FAULT_RULES }: FaultRulesOptions) {
    if (typeof now !== 'function') throw new TypeError('Expected `now` to be a function that returns the time in milliseconds.');
    if (!Number.isSafeInteger(maxRules) || maxRules < 1) throw new TypeError(`Expected \`maxRules\` to be a whole number >= 1, got ${maxRules}.`);
    this.#maxRules = maxRules;
    this.#now = now;
    this.#routes = routes;
    this.#accountExists = accountExists;
  }

  /** Checks and keeps a rule (last in order); an API key's rule is its own account's. Throws 400 `invalid_parameter`. */
  add(input: FaultRuleInput, caller: FaultCaller): FaultRuleView {
    checkFaultRule(input, this.#routes);
    let account = input.match.account ?? null;
    if (caller.account !== null) {
      if (account !== null && account !== caller.account) throw refuse('match.account', `An API key makes rules for its own account (${caller.account}) only; use the admin token for account ${account}.`);
      account = caller.account;
    } else if (account !== null && !this.#accountExists(account)) throw refuse('match.account', `No account ${account}.`);
    const scope = this.#scopes.get(account) ?? [];
    if (scope.length >= this.#maxRules) {
      const holder = account === null ? 'The service-wide set' : `Account ${account}`;
      throw new ServiceError('invalid_parameter', `${holder} holds ${scope.length} fault rules, the most it may: delete one (DELETE /test_helpers/faults/{id}) or reset first.`, { extra: { parameter: 'match.account', limit: this.#maxRules } });
    }
    const seq = ++this.#seq;
    const seed = input.seed ?? seq;
    const rule: Rule = {
      seq, id: `flt_${seq}`, seed, random: seededRandom(seed), times: input.times ?? null, after: input.after ?? 0, probability: input.probability ?? null,
      match: { operation: input.match.operation ?? null, method: input.match.method ?? null, path: input.match.path ?? null, account },
      action: actionOf(input.action), hits: 0, applied: 0, createdAt: this.#now(),
    };
    scope.push(rule);
    this.#scopes.set(account, scope);
    this.#byId.set(rule.id, rule);
    return viewOf(rule);
  }

  /** The rules the caller may see, in order: the admin's all (or one account's), a key's its own account's. */
  list(caller: FaultCaller, { account }: { account?: number | undefined } = {}): FaultRuleView[] {
    const scope = caller.account ?? account;
    const rules = scope === undefined ? [...this.#scopes.values()].flat().sort((a, b) => a.seq - b.seq) : (this.#scopes.get(scope) ?? []);
    return rules.map(viewOf);
  }

  /** Deletes a rule the caller may see; another's, or none, is 404 `not_found`. */
  remove(id: string, caller: FaultCaller): FaultRuleView {
    const rule = this.#byId.get(id);
    if (!rule || (caller.account !== null && rule.match.account !== caller.account)) throw new ServiceError('not_found', `No fault rule ${id}.`);
    const scope = this.#scopes.get(rule.match.account)!;
    scope.splice(scope.indexOf(rule), 1);
    if (scope.length === 0) this.#scopes.delete(rule.match.account);
    this.#byId.delete(id);
    return viewOf(rule);
  }

  /** Deletes an account's rules (an account deleted), or all of them (a reset: ids start again at flt_1). */
  clear({ account }: { account?: number | undefined } = {}): number {
    const gone = account === undefined ? [...this.#scopes.values()].flat() : (this.#scopes.get(account) ?? []);
    for (const rule of gone) this.#byId.delete(rule.id);
    if (account === undefined) {
      this.#scopes.clear();
      this.#seq = 0;
    } else this.#scopes.delete(account);
    return gone.length;
  }

  /**
   * The action for a request, counting it: the first rule (in order) that matches it, is not used up, has
   * let `after` matching requests through and wins its draw acts; each rule tried on the way counts the
   * request in `hits` (and, past `after`, draws for it). Test helper routes are never matched.
   */
  decide(request: FaultRequest): FaultDecision | null {
    // A tool call is matched by a rule that names the tool only, never by a method or a path.
    const faultable = faultableRoutes(this.#routes);
    let route = faultable.find((candidate) => candidate.operationId === request.operation);
    const tool = !route && isAssistantTool(request.operation);
    if (tool) route = faultable.find((candidate) => candidate.operationId === ASSISTANT_TOOLS[request.operation as keyof typeof ASSISTANT_TOOLS]);
    if (!route) return null;
    for (const rule of this.#candidates(request.account)) {
      if (rule.times !== null && rule.applied >= rule.times) continue;
      const { match } = rule;
      if (match.account !== null && match.account !== request.account) continue;
      if (tool ? match.operation !== request.operation : match.operation !== null ? match.operation !== route.operationId : (match.method !== null && match.method !== route.method) || (match.path !== null && match.path !== route.path)) continue;
      rule.hits++;
      if (rule.hits <= rule.after) continue;
      if (rule.probability !== null && rule.random() >= rule.probability) continue;
      rule.applied++;
      return { rule: viewOf(rule), action: rule.action, route, itemCodes: route.indexed ? route.problems : [] };
    }
    return null;
  }

  /** The rules that may match a request of `account`, in the order made: its own and the service-wide ones, merged by `seq`. */
  *#candidates(account: number | null): Generator<Rule> {
    const shared = this.#scopes.get(null) ?? [];
    const own = account === null ? [] : (this.#scopes.get(account) ?? []);
    let i = 0;
    let j = 0;
    while (i < shared.length || j < own.length) {
      if (j >= own.length || (i < shared.length && shared[i]!.seq < own[j]!.seq)) yield shared[i++]!;
      else yield own[j++]!;
    }
  }
}
