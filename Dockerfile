# tools-runner container image.
#   docker build -t tools-runner .
#   docker run --rm -p 8082:8082 -v tools-runner-data:/data \
#     -e TOOLS_RUNNER_ADMIN_HOST=0.0.0.0 -e TOOLS_RUNNER_ADMIN_TOKEN=<16+ chars> tools-runner
# The admin port (console, /metrics, /live) binds to a non-loopback address only with an admin token;
# without one it stays on 127.0.0.1 inside the container (the HEALTHCHECK still works).
# With an upstream RCRT server instead of the embedded store: see docs/docker-compose.example.yml.

# --- production dependencies (better-sqlite3 compiles here; deno ships its binary in an npm package)
FROM node:22-bookworm-slim AS deps
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev

# --- compile TypeScript
FROM deps AS build
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY console ./console
COPY scripts/build-console.mjs ./scripts/
RUN npm run build

# --- runtime
FROM node:22-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data \
 && chown node:node /data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY sandbox ./sandbox
COPY bootstrap-breadcrumbs ./bootstrap-breadcrumbs
ENV NODE_ENV=production \
    TOOLS_RUNNER_DATA_DIR=/data \
    TOOLS_RUNNER_AUDIT_DIR=/data/audit \
    TOOLS_RUNNER_ADMIN_PORT=8082
USER node
EXPOSE 8082
VOLUME ["/data"]
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.TOOLS_RUNNER_ADMIN_PORT||8082)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "node", "dist/cli/main.js"]
CMD ["start"]
