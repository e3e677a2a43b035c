# tools-runner container image.
#   docker build -t tools-runner .
#   docker run --rm -p 8082:8082 -v tools-runner-data:/data -e TOOLS_RUNNER_ADMIN_TOKEN=<16+ chars> tools-runner
# The admin port (console, /metrics, /live, /mcp) binds 0.0.0.0 so a published port reaches it; a
# non-loopback admin port needs an admin token, so the container refuses to start without
# TOOLS_RUNNER_ADMIN_TOKEN (/health stays open for the HEALTHCHECK and orchestrators).
# Agents outside the container and an upstream RCRT server: see docs/deployment.md and
# docs/docker-compose.example.yml.
# test/install/dockerfile.test.ts runs this file's stages without a Docker engine.

# --- build: every dependency installed once (better-sqlite3 compiles here, once; deno ships its binary
# in an npm package), TypeScript and the console compiled, then the dev dependencies pruned: the
# runtime stage copies this node_modules as it is.
FROM node:22-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY console ./console
COPY scripts/build-console.mjs ./scripts/
RUN npm run build
RUN npm prune --omit=dev --no-audit --no-fund

# --- runtime: tini as the one init (compose files must not add `init: true`)
FROM node:22-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data \
 && chown node:node /data
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY sandbox ./sandbox
COPY bootstrap-breadcrumbs ./bootstrap-breadcrumbs
ENV NODE_ENV=production \
    TOOLS_RUNNER_DATA_DIR=/data \
    TOOLS_RUNNER_ADMIN_HOST=0.0.0.0 \
    TOOLS_RUNNER_ADMIN_PORT=8082
USER node
EXPOSE 8081 8082
VOLUME ["/data"]
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.TOOLS_RUNNER_ADMIN_PORT||8082)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "node", "dist/cli/main.js"]
CMD ["start"]
