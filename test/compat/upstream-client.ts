// A client that speaks ONLY upstream rcrt-server's API, the way upstream's TypeScript SDK
// (RcrtClientEnhanced) and its bootstrap script do: JSON over fetch with default headers, the
// token re-fetched once on a 401, plain-text error bodies read with response.text(), `qvec` sent as
// JSON.stringify(array), the event stream opened with `agent_id`, `filters` and `access_token` in
// the query and only `data:` lines read. Written for the compat suite from reading the SDK; it
// shares no code with our own store client on purpose.
import http from 'node:http';

/** A stream the way an EventSource-based SDK client sees it: parsed `data:` payloads only. */
export interface UpstreamStream {
  events: Array<Record<string, any>>;
  /** Every raw line that was not a `data:` line (EventSource would interpret `id:`/`event:` lines). */
  otherLines: string[];
  waitFor(predicate: (events: Array<Record<string, any>>) => boolean): Promise<void>;
  close(): void;
}

export class UpstreamStyleClient {
  private headers: Record<string, string> = { 'Content-Type': 'application/json' };

  constructor(
    private readonly baseUrl: string,
    private readonly identity?: { owner_id: string; agent_id: string; roles?: string[] },
  ) {}

  /** Mints at POST /auth/token with no admin key, as upstream components do. */
  async login(): Promise<void> {
    if (!this.identity) return;
    const response = await fetch(`${this.baseUrl}/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(this.identity),
    });
    if (!response.ok) throw new Error(`Token request failed: ${response.status}`);
    const { token } = (await response.json()) as { token: string };
    this.headers.Authorization = `Bearer ${token}`;
  }

  private async fetchWithAuth(path: string, init: RequestInit = {}): Promise<Response> {
    const send = () =>
      fetch(this.baseUrl + path, {
        ...init,
        headers: { ...this.headers, ...(init.headers as Record<string, string> | undefined) },
      });
    let response = await send();
    if (response.status === 401 && this.identity) {
      await this.login();
      response = await send();
    }
    return response;
  }

  private async json<T>(what: string, path: string, init?: RequestInit): Promise<T> {
    const response = await this.fetchWithAuth(path, init);
    if (!response.ok) throw new Error(`Failed to ${what}: ${await response.text()}`);
    return (await response.json()) as T;
  }

  createBreadcrumb(body: Record<string, unknown>, idempotencyKey?: string) {
    return this.json<{ id: string }>('create breadcrumb', '/breadcrumbs', {
      method: 'POST',
      body: JSON.stringify(body),
      ...(idempotencyKey ? { headers: { 'Idempotency-Key': idempotencyKey } } : {}),
    });
  }
  getBreadcrumb(id: string) {
    return this.json<Record<string, any>>('get breadcrumb', `/breadcrumbs/${id}`);
  }
  getBreadcrumbFull(id: string) {
    return this.json<Record<string, any>>('get full breadcrumb', `/breadcrumbs/${id}/full`);
  }
  async updateBreadcrumb(id: string, version: number, updates: Record<string, unknown>) {
    await this.json('update breadcrumb', `/breadcrumbs/${id}`, {
      method: 'PATCH',
      body: JSON.stringify(updates),
      headers: { 'If-Match': String(version) },
    });
    return this.getBreadcrumb(id);
  }
  async deleteBreadcrumb(id: string) {
    await this.json('delete breadcrumb', `/breadcrumbs/${id}`, { method: 'DELETE' });
  }
  getBreadcrumbHistory(id: string) {
    return this.json<Array<Record<string, any>>>('get breadcrumb history', `/breadcrumbs/${id}/history`);
  }
  /** The SDK's searchBreadcrumbs: every param appended as given (arrays repeated) to GET /breadcrumbs. */
  searchBreadcrumbs(params: Record<string, unknown>) {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(params)) {
      if (value === undefined) continue;
      if (Array.isArray(value)) for (const v of value) query.append(key, String(v));
      else query.append(key, String(value));
    }
    return this.json<Array<Record<string, any>>>('search breadcrumbs', `/breadcrumbs?${query}`);
  }
  vectorSearch(params: { q?: string; qvec?: number[]; nn?: number; tag?: string }) {
    const qp = new URLSearchParams();
    if (params.q) qp.set('q', params.q);
    if (params.qvec) qp.set('qvec', JSON.stringify(params.qvec));
    if (typeof params.nn === 'number') qp.set('nn', String(params.nn));
    if (params.tag) qp.set('tag', params.tag);
    return this.json<Array<Record<string, any>>>('perform vector search', `/breadcrumbs/search?${qp}`);
  }
  listAgents = () => this.json<Array<Record<string, any>>>('list agents', '/agents');
  getAgent = (id: string) => this.json<Record<string, any>>('get agent', `/agents/${id}`);
  createOrUpdateAgent = (id: string, roles: string[]) =>
    this.json('create/update agent', `/agents/${id}`, { method: 'POST', body: JSON.stringify({ roles }) });
  deleteAgent = (id: string) => this.json('delete agent', `/agents/${id}`, { method: 'DELETE' });
  listTenants = () => this.json<Array<Record<string, any>>>('list tenants', '/tenants');
  getTenant = (id: string) => this.json<Record<string, any>>('get tenant', `/tenants/${id}`);
  createOrUpdateTenant = (id: string, name: string) =>
    this.json('create/update tenant', `/tenants/${id}`, { method: 'PUT', body: JSON.stringify({ name }) });
  deleteTenant = (id: string) => this.json('delete tenant', `/tenants/${id}`, { method: 'DELETE' });
  listAcls = () => this.json<Array<Record<string, any>>>('list ACLs', '/acl');
  listDlq = () => this.json<Array<Record<string, any>>>('list DLQ', '/dlq');
  deleteDlqItem = (id: string) => this.json('delete DLQ item', `/dlq/${id}`, { method: 'DELETE' });
  createSecret = (name: string, value: string, scope_type?: string, scope_id?: string) =>
    this.json<{ id: string }>('create secret', '/secrets', {
      method: 'POST',
      body: JSON.stringify({ name, value, scope_type, scope_id }),
    });
  getSecret = (id: string, reason = 'SDK:getSecret') =>
    this.json<{ value: string }>('decrypt secret', `/secrets/${id}/decrypt`, {
      method: 'POST',
      body: JSON.stringify({ reason }),
    });
  listSecrets = (scope_type?: string) =>
    this.json<Array<Record<string, any>>>('list secrets', `/secrets${scope_type ? `?scope_type=${scope_type}` : ''}`);
  updateSecret = (id: string, value: string) =>
    this.json('update secret', `/secrets/${id}`, { method: 'PUT', body: JSON.stringify({ value }) });
  deleteSecret = (id: string) => this.json('delete secret', `/secrets/${id}`, { method: 'DELETE' });
  createSelector = (selector: Record<string, unknown>) =>
    this.json<Record<string, any>>('create selector', '/subscriptions/selectors', {
      method: 'POST',
      body: JSON.stringify(selector),
    });
  listSelectors = () => this.json<Array<Record<string, any>>>('list selectors', '/subscriptions/selectors');

  /** startEventStream: agent_id, filters and access_token in the query; reads `data:` lines only. */
  startEventStream(options: { agentId?: string; filters?: Record<string, unknown> } = {}): Promise<UpstreamStream> {
    const url = new URL(`${this.baseUrl}/events/stream`);
    if (options.agentId) url.searchParams.append('agent_id', options.agentId);
    if (options.filters) url.searchParams.append('filters', JSON.stringify(options.filters));
    const auth = this.headers.Authorization;
    if (auth) url.searchParams.append('access_token', auth.slice('Bearer '.length));
    const events: Array<Record<string, any>> = [];
    const otherLines: string[] = [];
    const waiters: Array<{ predicate: (e: typeof events) => boolean; resolve: () => void }> = [];
    return new Promise((resolve, reject) => {
      const req = http.get(url, { headers: { Accept: 'text/event-stream' } }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`SSE connection error: ${res.statusCode}`));
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let cut;
          while ((cut = buffer.indexOf('\n')) !== -1) {
            const line = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 1);
            if (line.startsWith('data: ')) events.push(JSON.parse(line.slice(6)) as Record<string, any>);
            else if (line !== '') otherLines.push(line);
          }
          for (const waiter of [...waiters]) {
            if (waiter.predicate(events)) {
              waiters.splice(waiters.indexOf(waiter), 1);
              waiter.resolve();
            }
          }
        });
        resolve({
          events,
          otherLines,
          waitFor: (predicate) =>
            predicate(events) ? Promise.resolve() : new Promise((done) => waiters.push({ predicate, resolve: done })),
          close: () => req.destroy(),
        });
      });
      req.on('error', reject);
    });
  }
}
