# The service alone: built from src/ without the demo (tsconfig.build.json), production
# dependencies only. No `# syntax=` line or BuildKit-only syntax: it builds with no registry reachable
# once the base image is present (scripts/container-check.sh builds that base locally).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/copy-lua.js ./scripts/
COPY src ./src
# typescript stays after the prune only as valibot's optional peer (through @bull-board/api), which
# nothing loads at run time: 23 MB of compiler out of the image.
RUN npx tsc -p tsconfig.build.json && node scripts/copy-lua.js && npm prune --omit=dev --no-audit --no-fund && rm -rf node_modules/typescript

FROM node:24-bookworm-slim
# The admin port (probes, /metrics, dashboard) must be reachable from outside the container; it is
# authenticated except /healthz and /readyz. Set ADMIN_TOKEN (or ADMIN_USER/ADMIN_PASSWORD).
ENV NODE_ENV=production ADMIN_HOST=0.0.0.0
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY config/default.yaml ./config/default.yaml
USER node
EXPOSE 8080 9090
# The admin port answers /healthz in every ROLE (a worker has no public port).
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.ADMIN_PORT||9090)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# The V8 limits of `npm start` (package.json; test/start-command.test.ts keeps the two equal).
CMD ["node", "--max-old-space-size=128", "--max-semi-space-size=16", "--heap-growing-percent=100", "dist/src/main.js"]
