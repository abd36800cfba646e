/**
 * ISO 4217 currency codes accepted for payments (active codes, lower case as Stripe spells them), and
 * the ones whose amount is not in hundredths. Amounts are in the currency's smallest unit as the
 * processor counts it: cents for usd, yen for jpy.
 */
export const CURRENCIES: ReadonlySet<string> = new Set(
  (
    'aed afn all amd ang aoa ars aud awg azn bam bbd bdt bgn bhd bif bmd bnd bob bov brl bsd btn bwp byn bzd ' +
    'cad cdf che chf chw clf clp cny cop cou crc cuc cup cve czk djf dkk dop dzd egp ern etb eur fjd fkp gbp ' +
    'gel ghs gip gmd gnf gtq gyd hkd hnl htg huf idr ils inr iqd irr isk jmd jod jpy kes kgs khr kmf kpw krw ' +
    'kwd kyd kzt lak lbp lkr lrd lsl lyd mad mdl mga mkd mmk mnt mop mru mur mvr mwk mxn mxv myr mzn nad ngn ' +
    'nio nok npr nzd omr pab pen pgk php pkr pln pyg qar ron rsd rub rwf sar sbd scr sdg sek sgd shp sle sll ' +
    'sos srd ssp stn svc syp szl thb tjs tmt tnd top try ttd twd tzs uah ugx usd usn uyi uyu uyw uzs ved ves ' +
    'vnd vuv wst xaf xcd xcg xof xpf yer zar zmw zwg zwl'
  ).split(' '),
);

/** Stripe's zero-decimal currencies: an amount of 500 jpy is ¥500. */
export const ZERO_DECIMAL_CURRENCIES: ReadonlySet<string> = new Set(
  'bif clp djf gnf jpy kmf krw mga pyg rwf ugx vnd vuv xaf xof xpf'.split(' '),
);

/** Stripe's three-decimal currencies: the amount's last digit must be 0. */
export const THREE_DECIMAL_CURRENCIES: ReadonlySet<string> = new Set('bhd jod kwd omr tnd'.split(' '));

/** The largest amount in minor units (Stripe's limit: eight digits). */
export const MAX_PAYMENT_AMOUNT = 99_999_999;
