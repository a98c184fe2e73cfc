# A stand-in for the pickled stock frame CNTK 104 reads (data/Stock/stock_SPY.pkl, which its
# download cell writes from Google Finance's daily SPY bars), written by pandas beside CNTK 2.7
# (tools/cntk_notebooks.py runs it with CNTK's Python 3.6, so that the pickle loads in that
# pandas and, pickles being read forward, in a newer one beside Stadyn):
#
#     python cntk_stock_standin.py OUT.pkl [--seed 104]
#
# The frame is laid out as pandas_datareader's: a DatetimeIndex named Date, the columns Open,
# High, Low, Close (float64) and Volume (int64), one row per trading day from 2000-01-03 to
# 2016-12-30.  Trading days are the weekdays less 9 drawn holidays a year, and a few more in
# 104's training span, which has exactly 2000 days (2001-02-05 to 2009-01-20, 20 minibatches
# of 100: the notebook splits it with np.split).  Prices are a random walk from 140 with a
# small drift; High and Low lie around Open and Close; the values are random, not SPY's.
from __future__ import print_function

import argparse

import numpy as np
import pandas as pd

TRAINING_SPAN = ("2001-02-05", "2009-01-20")
TRAINING_DAYS = 2000


def trading_days(rs):
    days = pd.bdate_range("2000-01-03", "2016-12-30")
    keep = np.ones(len(days), bool)
    for year in range(2000, 2017):
        in_year = np.flatnonzero(days.year == year)
        keep[rs.choice(in_year, 9, replace=False)] = False
    span = np.flatnonzero(keep & (days >= TRAINING_SPAN[0]) & (days <= TRAINING_SPAN[1]))
    span = span[(days[span] != TRAINING_SPAN[0]) & (days[span] != TRAINING_SPAN[1])]
    extra = int(keep[(days >= TRAINING_SPAN[0]) & (days <= TRAINING_SPAN[1])].sum()) \
        - TRAINING_DAYS
    assert extra >= 0, "too few trading days in the training span"
    keep[rs.choice(span, extra, replace=False)] = False
    return days[keep]


def stock_frame(seed):
    rs = np.random.RandomState(seed)
    days = trading_days(rs)
    close = 140 * np.exp(np.cumsum(rs.normal(0.0002, 0.012, len(days))))
    open_ = np.concatenate([[140.0], close[:-1]]) * np.exp(rs.normal(0, 0.004, len(days)))
    high = np.maximum(open_, close) * np.exp(np.abs(rs.normal(0, 0.006, len(days))))
    low = np.minimum(open_, close) * np.exp(-np.abs(rs.normal(0, 0.006, len(days))))
    volume = np.exp(rs.normal(18.5, 0.4, len(days))).astype(np.int64)
    frame = pd.DataFrame({"Open": open_.round(2), "High": high.round(2), "Low": low.round(2),
                          "Close": close.round(2), "Volume": volume},
                         index=pd.DatetimeIndex(days, name="Date"))
    return frame[["Open", "High", "Low", "Close", "Volume"]]


def main():
    p = argparse.ArgumentParser(description="CNTK 104's stock_SPY.pkl stand-in")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=104)
    args = p.parse_args()
    frame = stock_frame(args.seed)
    frame.to_pickle(args.out, protocol=2)
    print("wrote %s: %d trading days" % (args.out, len(frame)))


if __name__ == "__main__":
    main()
