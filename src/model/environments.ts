/** The environment the flat key settings make, and the one a target takes when it names none. */
export const DEFAULT_ENVIRONMENT = 'production';

/** Whether a target takes events of this environment (a target built without the loader takes production). */
export function takesEnvironment(target: { environments?: readonly string[] }, environment: string): boolean {
  return (target.environments ?? [DEFAULT_ENVIRONMENT]).includes(environment);
}

/** The configured environments' names, in the order the configuration lists them. */
export function environmentNames(c: { environments?: Readonly<Record<string, unknown>> }): string[] {
  return c.environments ? Object.keys(c.environments) : [DEFAULT_ENVIRONMENT];
}
