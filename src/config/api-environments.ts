import { createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { EventType } from '../model/event-table';
import type { TransformCode } from '../transform/sandbox';
import { readTransformFile, transformFileOf } from '../transform/source';
import type { InquiryFunctions } from './api-schema';
import { environmentsOf } from './environments';
import { ConfigError } from './errors';
import { loadEnvironments } from './keys';
import type { Config } from './schema';

/** One event type's inquiry functions as they run: their source text, and the time limit of a call. */
export interface InquiryCode {
  request?: TransformCode;
  settled: TransformCode;
  timeoutMs: number;
}

/** A platform environment whose API this merchant calls: everything an inquiry needs, keys loaded. */
export interface ApiEnvironment {
  name: string;
  baseUrl: string;
  /** The merchant's private key: it signs every request. */
  privateKey: KeyObject;
  /** `x-svc-appid`. */
  appId: string;
  /** `X-Merch-Id`, on every endpoint but onboarding's. */
  merchantId?: string;
  deliverFromInquiry: boolean;
  timeoutMs: number;
  /** The platform's public keys of this environment: its answers must verify with one. */
  platformKeys: readonly KeyObject[];
  inquiry: Partial<Record<EventType, InquiryCode>>;
}

const DEFAULT_FUNCTION_TIMEOUT_MS = 50;

/**
 * The environments that configure `api`, with the merchant's key read (`file:` or `env:`, from the
 * environment given, never logged) and the inquiry functions' sources read. Every problem is
 * collected into one ConfigError.
 */
export function loadApiEnvironments(
  config: Pick<Config, 'environments' | 'platformPublicKeys' | 'platformAppId' | 'merchantId'>,
  env: Record<string, string | undefined>,
): ApiEnvironment[] {
  const withApi = Object.entries(config.environments ?? {}).filter(([, e]) => e.api !== undefined);
  if (withApi.length === 0) return [];
  const keysByName = new Map(loadEnvironments(config).map((e) => [e.name, e.keys]));
  const settingsByName = new Map(environmentsOf(config).map((e) => [e.name, e]));
  const problems: string[] = [];
  const loaded: ApiEnvironment[] = [];
  for (const [name, { api }] of withApi) {
    if (!api) continue;
    const where = `environments.${name}.api`;
    const settings = settingsByName.get(name);
    const privateKey = attempt(problems, `${where}.privateKey`, () => readPrivateKey(api.privateKey, env));
    const inquiry: Partial<Record<EventType, InquiryCode>> = {};
    for (const [type, functions] of Object.entries(api.inquiry) as [EventType, InquiryFunctions][]) {
      const code = attempt(problems, `${where}.inquiry.${type}`, () =>
        inquiryCode(functions, `${where}.inquiry.${type}`),
      );
      if (code) inquiry[type] = code;
    }
    if (!settings?.appId)
      problems.push(`${where}: needs the environment's appId (or platformAppId): it is sent as x-svc-appid`);
    if (!privateKey || !settings?.appId) continue;
    loaded.push({
      name,
      baseUrl: api.baseUrl.replace(/\/+$/, ''),
      privateKey,
      appId: settings.appId,
      ...(settings.merchantId !== undefined ? { merchantId: settings.merchantId } : {}),
      deliverFromInquiry: api.deliverFromInquiry,
      timeoutMs: api.timeoutMs,
      platformKeys: keysByName.get(name) ?? [],
      inquiry,
    });
  }
  if (problems.length) throw new ConfigError(problems);
  return loaded;
}

function attempt<T>(problems: string[], where: string, load: () => T): T | undefined {
  try {
    return load();
  } catch (err) {
    problems.push(`${where}: ${(err as Error).message}`);
    return undefined;
  }
}

function readPrivateKey(reference: string, env: Record<string, string | undefined>): KeyObject {
  let text: string | undefined;
  if (reference.startsWith('file:')) {
    const file = reference.slice('file:'.length);
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  } else {
    const name = reference.slice('env:'.length);
    text = env[name];
    if (!text) throw new Error(`the environment variable ${name} is not set`);
  }
  const pem = text.includes('-----BEGIN') ? text.replace(/\\n/g, '\n') : undefined;
  let key: KeyObject;
  try {
    key = pem
      ? createPrivateKey(pem)
      : createPrivateKey({ key: Buffer.from(text.replace(/\s+/g, ''), 'base64'), format: 'der', type: 'pkcs8' });
  } catch {
    // The key's text never goes into a message.
    throw new Error('not a PKCS#8 private key (PEM, or Base64 DER)');
  }
  if (key.asymmetricKeyType !== 'rsa') throw new Error('is not an RSA key; SHA256withRSA needs RSA');
  return key;
}

function inquiryCode(functions: InquiryFunctions, where: string): InquiryCode {
  const source = (text: string, name: string): TransformCode => {
    const file = transformFileOf(text);
    return file ? { source: readTransformFile(file), file } : { source: text, file: `inline:${where}.${name}` };
  };
  return {
    ...(functions.request !== undefined ? { request: source(functions.request, 'request') } : {}),
    settled: source(functions.settled, 'settled'),
    timeoutMs: functions.timeoutMs ?? DEFAULT_FUNCTION_TIMEOUT_MS,
  };
}
