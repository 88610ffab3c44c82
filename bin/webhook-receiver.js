#!/usr/bin/env node
'use strict';
require('./run-built')('src/cli/main.js');
