# The scale scenario's plot: claims Available over time, one line per run, drawn by
# test/scaleplot (its own Go module, so the plotting library is no dependency of the product)
# from the CSVs `make e2e-scale` writes. Included from the top-level Makefile; `make test`
# runs scaleplot-test.
#
#   make scale-plot                     every _output/e2e/scale/<kind>-<n>.csv into the PNG
#   make scale-plot SCALE_CSVS="a.csv b.csv" SCALE_PLOT=my.png

SCALE_CSVS ?= $(sort $(wildcard $(E2E_OUTPUT)/scale/*.csv))
SCALE_PLOT ?= docs/images/scale-available.png

## scale-plot: draw the scale runs' CSVs (docs/performance.md shows the result).
.PHONY: scale-plot
scale-plot:
	@if [ -z "$(strip $(SCALE_CSVS))" ]; then echo "scale-plot: no CSVs in $(E2E_OUTPUT)/scale: run make e2e-scale first"; exit 1; fi
	@mkdir -p $(dir $(abspath $(SCALE_PLOT)))
	$(GO) -C test/scaleplot run -trimpath . -o $(abspath $(SCALE_PLOT)) $(abspath $(SCALE_CSVS))

## scaleplot-test: the plot's own tests.
# The tests run with -vet=off after the full vet, as make test's (Makefile).
.PHONY: scaleplot-test
scaleplot-test:
	$(GO) -C test/scaleplot vet -trimpath ./...
	$(GO) -C test/scaleplot test -trimpath -count=1 -vet=off ./...

# What one replica serves against bare memcached, per mode, from the CSV
# TestNodeServesLikeBareMemcached writes (make e2e E2E_RUN=TestNodeServesLikeBareMemcached).
SERVES_CSV ?= $(E2E_OUTPUT)/serves/serves.csv
SERVES_PLOT ?= docs/images/replica-serves.png

## serves-plot: draw what one replica serves against bare memcached (docs/performance.md).
.PHONY: serves-plot
serves-plot:
	@if [ ! -f "$(SERVES_CSV)" ]; then echo "serves-plot: no $(SERVES_CSV): run make e2e E2E_RUN=TestNodeServesLikeBareMemcached first"; exit 1; fi
	@mkdir -p $(dir $(abspath $(SERVES_PLOT)))
	$(GO) -C test/scaleplot run -trimpath . -serves -title "One replica, CPU limit 250m: gets a second, rendered pod ÷ bare in brackets" -o $(abspath $(SERVES_PLOT)) $(abspath $(SERVES_CSV))
