-- summary.lua — busted output handler for `make test`: a dot per test, every failure and
-- skip with its name and reason, the five slowest spec files with their seconds (wall, from
-- busted's file start and end), and one closing line "N passed, N failed[, N skipped]".
return function(options)
  local busted = require "busted"
  local handler = require "busted.outputHandlers.base"()
  local out = io.stdout

  local function name_of(element)
    return handler.getFullName(element)
  end

  handler.testEnd = function(element, parent, status)
    out:write(status == "success" and "." or status == "pending" and "s" or "F")
    out:flush()
    return nil, true
  end

  local files = {} -- { name, seconds } per spec file, in the order they ran
  handler.fileEnd = function(file)
    files[#files + 1] = { file.name, file.duration or 0 }
    return nil, true
  end

  local function slowest(n)
    table.sort(files, function(a, b) return a[2] > b[2] end)
    if #files == 0 then return end
    out:write("slowest spec files:\n")
    for i = 1, math.min(n, #files) do
      out:write(("%8.1f s  %s\n"):format(files[i][2], files[i][1]))
    end
  end

  local function trace_line(t)
    if not t or not t.short_src then return "" end
    return ("%s:%d: "):format(t.short_src, t.currentline or 0)
  end

  handler.suiteEnd = function()
    out:write("\n")
    for _, p in ipairs(handler.pendings) do
      local why = tostring(p.message or ""):gsub("^[^\n]-:%d+: ", "")
      out:write(("skipped: %s — %s\n"):format(p.name, why))
    end
    for _, list in ipairs { handler.failures, handler.errors } do
      for _, f in ipairs(list) do
        out:write(("\nFAILED: %s\n  %s%s\n"):format(f.name, trace_line(f.trace),
          tostring(f.message or "")))
      end
    end
    slowest(5)
    local failed = handler.failuresCount + handler.errorsCount
    local line = ("%d passed, %d failed"):format(handler.successesCount, failed)
    if handler.pendingsCount > 0 then
      line = line .. (", %d skipped"):format(handler.pendingsCount)
    end
    out:write(line, "\n")
    return nil, true
  end

  busted.subscribe({ "test", "end" }, handler.testEnd, { predicate = handler.cancelOnPending })
  busted.subscribe({ "file", "end" }, handler.fileEnd)
  busted.subscribe({ "suite", "end" }, handler.suiteEnd)
  return handler
end
