import { describe, expect, it } from 'vitest';
import { compose, named, successOf } from '../../../src/service/runner/chain.js';
import { routeOf } from './fixtures.js';

describe('compose: one chain of named steps (issue 31 item 1)', () => {
  it('runs the steps in order, each around the rest, and stops where a step does not call next', async () => {
    const seen: string[] = [];
    const step = (name: string, goOn = true) =>
      named<object>(name, async (_run, next) => {
        seen.push(`${name}>`);
        if (goOn) await next();
        seen.push(`<${name}`);
      });
    await compose([step('a'), step('b', false), step('c')])({});
    expect(seen).toEqual(['a>', 'b>', '<b', '<a']);
    expect(step('x').stepName).toBe('x');
  });

  it('refuses a step that calls next twice, naming it', async () => {
    const twice = named<object>('twice', async (_run, next) => {
      await next();
      await next();
    });
    await expect(compose([twice])({})).rejects.toThrow('The twice step called next() twice.');
  });

  it('answers a route with its one 2xx status', () => {
    expect(successOf(routeOf('createVideo'))).toBe(202);
    expect(successOf(routeOf('createVideoBatch'))).toBe(207);
    expect(successOf(routeOf('getVideo'))).toBe(200);
  });

  it('finds a route\'s 2xx status once, not per request (issue 31: the bench\'s service figures)', () => {
    let scans = 0;
    const route = { ...routeOf('createVideo') };
    route.responses = new Proxy(route.responses, { ownKeys: (target) => (scans++, Reflect.ownKeys(target)) });
    expect([successOf(route), successOf(route), successOf(route)]).toEqual([202, 202, 202]);
    expect(scans).toBe(1);
  });
});
